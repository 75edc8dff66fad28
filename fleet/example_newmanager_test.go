package fleet_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log"
	"os"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/shim"
	"github.com/gpufleet/gpufleet/vultr"
	"golang.org/x/crypto/ssh"
)

// The README's fleet on the real clouds: two 8x MI300X bare-metal servers in
// one VPC, dstack-shim started on each over SSH, deleted when the work is
// done. It is compiled but not run here (it rents machines); the Manager
// example runs the same fleet on the simulator.
func ExampleNewManager() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop() // ends Run
	// The fleet's SSH key, in memory only.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		log.Fatal(err)
	}
	authorizedKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	starter, err := shim.New(shim.DstackShim("0.19.41"), []ssh.Signer{signer},
		shim.TrustOnFirstUse(shim.NewMemoryHostKeyStore()))
	if err != nil {
		log.Fatal(err)
	}
	vc := vultr.New(os.Getenv("VULTR_API_KEY"))
	hc := hotaisle.New(os.Getenv("HOTAISLE_API_KEY"), os.Getenv("HOTAISLE_TEAM"))
	m, err := fleet.NewManager(fleet.Config{ // hotaisle.WithBareMetal(true) to rent its 8 h-prepaid bare metal
		Providers: []fleet.Provider{vultr.NewProvider(vc), hotaisle.NewProvider(hc)},
		Agent:     starter, // or nil: ready as soon as the cloud says running
		OnEvent:   func(e fleet.Event) { log.Println(e) },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// 8x MI300X in one VPC: today that is Vultr bare metal (40+ minutes to boot;
	// Hot Aisle has no VPCs). An idle node is released at the last safe moment of
	// the hour it is paid for (IdleTimeout only counts where each idle minute is
	// billed, as past a Hot Aisle minimum; see Spec.IdleTimeout), and the fleet
	// shrinks (never below MinNodes).
	err = m.Apply(ctx, fleet.Spec{
		Name: "train", Nodes: 2, MinNodes: 1, Placement: fleet.PlacementCluster, IdleTimeout: 30 * time.Minute,
		Requirements: fleet.Requirements{GPUModel: "MI300X", GPUCount: 8, MaxPricePerHour: 30},
		SSHKeys:      []string{authorizedKey}, // one authorized_keys line each
	})
	if err != nil {
		log.Fatal(err) // an invalid spec, or a provider that is not configured
	}
	go m.Run(ctx) // passes whenever something falls due or a call is recorded (10 s at most apart) until ctx ends
	// Place each job with m.Acquire(ctx, "train"): the idle node with the most paid time
	// left (the cheaper on ties), marked busy at once (fleet.ErrNoIdle: none; grow the fleet with Apply); give
	// it back with m.GiveBack(node) when the job ends (a retried give-back that comes after the node was
	// handed out again answers fleet.ErrHandedOutAgain and changes nothing), or m.Release(ctx, node.ID).
	if err := m.Delete(ctx, "train"); err != nil {
		log.Fatal(err)
	}
	for len(m.Fleets()) > 0 { // Run releases by policy, retrying until the clouds confirm
		time.Sleep(10 * time.Second)
	}
}
