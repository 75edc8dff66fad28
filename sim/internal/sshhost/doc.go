// Package sshhost holds the fake SSH hosts of package sim's fakes and the
// in-memory Network they live on: an SSH server per host with public-key
// authentication, a bash shell (mvdan.cc/sh/v3's interpreter) over an
// in-memory file system, a tracked agent process, and dials that meet the
// failures a real network shows. It imports only package core of the
// module.
package sshhost
