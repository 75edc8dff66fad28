// Package hotaislefake is the fake of the Hot Aisle API behind
// sim.NewHotAisle: teams, virtual machines and their power routes (start,
// stop, shutdown, reboot, hard-reset), bare metal and its power routes,
// SSH keys, the ledger and Hot Aisle's error dialect, on the pipeline of
// package core and the SSH hosts of package sshhost. It never imports the
// Vultr fake nor package sim; New builds it from a Config that sim's options
// fill.
//
// # Bare-metal pool
//
// Bare metal is a pool of physical servers: "pool (Quantity in
// /bare_metal/available/) → POST (201) → assigned → DELETE (204) → pool".
// A released server goes back to its catalog row's pool under its name (its
// host name), with its private address and its port on the front host, and
// a later reservation of the row may get it again: reinstalled (the OS
// install starts over, and its SSH host key is new), with a new reservation
// (the minimum is charged again, in a new ledger charge under the same
// ResourceID) and nothing of the earlier rental (description, power state,
// files, agent). A reservation takes the lowest-numbered server back in the
// row's pool, else a server never rented before (the next name of the
// seeded sequence), so names stay the same for a seed.
//
// # Bare-metal power
//
// GET /api/teams/{team}/bare_metal/{server}/power/ answers {"state": "On"}
// or {"state": "Off"}.
//
// Bare-metal power actions (the spec's serverPowerOnReq,
// serverGracefulShutdownReq, serverForceShutdownReq, serverWarmRebootReq,
// serverColdRebootReq, serverACResetReq), each answering 204:
//   - power_on makes an "Off" server "On" at once; on an "On" server (also
//     one in a graceful shutdown) it changes nothing ("turns on the server if
//     it is currently off");
//   - graceful_shutdown keeps the power "On" for
//     DefaultHotAisleBareMetalShutdownTime, then "Off";
//   - force_shutdown makes it "Off" at once and cancels any power-on still
//     pending (a cold reboot's, an AC reset's); on an "Off" server it
//     changes nothing else;
//   - warm_reboot keeps it "On" (the power is not cut);
//   - cold_reboot makes it "Off" for DefaultHotAisleBareMetalOffTime, then
//     "On";
//   - ac_reset (a reset at the mains: AC, alternating current) needs an
//     "Off" server ("must already be in the off state"): the management
//     controller resets for DefaultHotAisleACResetTime, the power reads and
//     actions answer 500 "Internal Server Error" meanwhile, then the power
//     is "On" again.
//
// sshd (and the server's port on the front host) goes down with every one
// of them but power_on, and accepts connections again
// DefaultHotAisleBareMetalBootTime after the power comes on (a fresh boot:
// processes of the old one are gone). Graceful shutdown, warm and cold
// reboot of an "Off" server answer 400 "Bad Request: server is powered
// off"; ac_reset of an "On" one 400 "Bad Request: server must be powered off
// for an AC reset"; every action while the operating system is installing
// 400 "Bad Request: operating system install in progress"; a server the team
// does not hold 404 "Not Found: Resource not found", as GET power/ does. A
// server that is off keeps billing: it stays reserved to the team (the fake
// assumes what the CLI says of a stopped VM).
package hotaislefake
