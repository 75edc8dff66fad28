// Package hotaislefake is the fake of the Hot Aisle API behind
// sim.NewHotAisle: teams, virtual machines, bare metal, SSH keys, the
// ledger and Hot Aisle's error dialect, on the pipeline of package core and
// the SSH hosts of package sshhost. It never imports the Vultr fake nor
// package sim; New builds it from a Config that sim's options fill.
package hotaislefake
