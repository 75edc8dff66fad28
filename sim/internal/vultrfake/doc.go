// Package vultrfake is the fake of the Vultr API v2 behind sim.NewVultr:
// routes, server state machines, VPCs, SSH keys, the catalog, billing and
// Vultr's error dialect, on the pipeline of package core and the SSH hosts
// of package sshhost. It never imports the Hot Aisle fake nor package sim;
// New builds it from a Config that sim's options fill.
package vultrfake
