package shim_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/shim"
	"github.com/gpufleet/gpufleet/sim"
	"golang.org/x/crypto/ssh"
)

// Start dstack-shim on a fake host of package sim: the host accepts the key,
// runs the install steps in its shell and serves the agent's health check,
// which Start verifies through an SSH port forward. Against a real machine,
// drop WithDial and pass the instance the Manager (or the cloud) reports.
func ExampleStarter_Start() {
	seed := sha256.Sum256([]byte("example key")) // use ed25519.GenerateKey in real code
	signer, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		log.Fatal(err)
	}
	network := sim.NewNetwork(nil, 1) // the real clock; seed 1
	defer network.Close()
	host := network.AddHost(sim.HostConfig{Addr: "203.0.113.7:22", InstanceID: "vm-7", User: "root",
		AuthorizedKeys: func() []ssh.PublicKey { return []ssh.PublicKey{signer.PublicKey()} }})

	starter, err := shim.New(shim.DstackShim("0.19.41"), []ssh.Signer{signer},
		shim.TrustOnFirstUse(shim.NewMemoryHostKeyStore()), // pin the key first seen for "vm-7"
		shim.WithDial(network.Dial))                        // omit for real machines
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst := fleet.Instance{ID: "vm-7", SSH: fleet.SSHEndpoint{User: "root", Host: "203.0.113.7", Port: 22}}
	if err := starter.Start(ctx, inst); err != nil {
		var step *shim.StepError
		if errors.As(err, &step) {
			log.Fatalf("install step failed: %v", step) // stderr of the step is in the error
		}
		log.Fatalf("%s stage failed: %v", shim.StageOf(err), err)
	}
	fmt.Println("running:", host.AgentRunning(), "detached:", host.AgentDetached())
	fmt.Println("healthy:", starter.Check(ctx, inst) == nil)
	for _, c := range host.Commands() {
		if strings.Contains(c.Command, "systemctl") {
			fmt.Println("started by systemd")
			break
		}
	}
	// Output:
	// running: true detached: true
	// healthy: true
	// started by systemd
}
