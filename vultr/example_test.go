package vultr_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
)

// The examples run against the in-memory Vultr fake. With a real account,
// drop WithHTTPClient and pass your API key.

// fastSim is a fake whose clock runs 6000 times faster than the wall clock:
// the 90 s of "pending" pass in 15 ms.
func fastSim() *sim.Vultr { return sim.NewVultr(sim.WithClock(sim.ScaledClock(6000))) }

func ExampleNew() {
	fake := sim.NewVultr()
	c := vultr.New(sim.DefaultAPIKey,
		vultr.WithHTTPClient(fake.Client()), // omit for the real API
		vultr.WithRateLimit(30, 1),          // the default: Vultr's 30 requests/s
		vultr.WithRetry(5, 500*time.Millisecond, 30*time.Second),
	)
	fmt.Println(c) // the key is never printed
	// Output: vultr.Client{https://api.vultr.com}
}

func ExampleClient_ListPlans() {
	fake := sim.NewVultr()
	c := vultr.New("", vultr.WithHTTPClient(fake.Client())) // plans need no key
	for p, err := range c.ListPlans(context.Background(), &vultr.PlanListOptions{Type: "vcg"}) {
		if err != nil {
			log.Fatal(err)
		}
		if p.GPUType == "NVIDIA_A100" && p.GPUVRAMGB >= 20 {
			fmt.Printf("%s: %d GB VRAM, %d MB RAM, $%.3f/h\n", p.ID, p.GPUVRAMGB, p.RAM, p.HourlyCost)
		}
	}
	// Output:
	// vcg-a100-3c-30g-20vram: 20 GB VRAM, 30720 MB RAM, $0.599/h
	// vcg-a100-12c-120g-80vram: 80 GB VRAM, 122880 MB RAM, $2.397/h
}

func ExampleClient_CreateInstance() {
	fake := sim.NewVultr()
	c := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(fake.Client()))
	inst, err := c.CreateInstance(context.Background(), &vultr.InstanceCreate{
		Region:   "ewr",
		Plan:     "vcg-a100-3c-30g-20vram",
		Label:    "fleet-7f3a-0", // find it again by label after an ambiguous failure
		OSID:     1743,           // Ubuntu 22.04
		Tags:     []string{"gpufleet"},
		UserData: []byte("#cloud-config\nruncmd: []\n"), // raw; base64-encoded for you
	})
	if errors.Is(err, fleet.ErrNoCapacity) {
		fmt.Println("sold out: try another region")
		return
	}
	if err != nil {
		log.Fatal(err) // never retry a create blindly: list by label first
	}
	_, hasIP := inst.PublicIP()
	fmt.Println(inst.Status, hasIP, inst.DefaultPassword)
	// Output: pending false [redacted]
}

func ExampleClient_GetInstance() {
	fake := fastSim()
	c := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(fake.Client()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := c.CreateInstance(ctx, &vultr.InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
	if err != nil {
		log.Fatal(err)
	}
	// Poll until the API says active and an address is assigned.
	for {
		got, err := c.GetInstance(ctx, inst.ID)
		if err != nil {
			log.Fatal(err)
		}
		if _, ok := got.PublicIP(); ok && got.Status == "active" {
			fmt.Println(got.Status, got.PowerStatus)
			break
		}
		time.Sleep(5 * time.Millisecond) // use ~10 s against the real API
	}
	// Output: active running
}

func ExampleClient_DeleteInstance() {
	fake := fastSim()
	c := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(fake.Client()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := c.CreateInstance(ctx, &vultr.InstanceCreate{Region: "ewr", Plan: "vc2-1c-1gb", OSID: 1743})
	if err != nil {
		log.Fatal(err)
	}
	// Vultr refuses a delete while the server is pending (not active) and for
	// minutes after it became active (locked). Those are returned, not
	// retried, so the caller decides how long to keep trying.
	for {
		err := c.DeleteInstance(ctx, inst.ID)
		switch {
		case err == nil, errors.Is(err, fleet.ErrNotFound): // gone is success
			fmt.Println("deleted")
			return
		case errors.Is(err, fleet.ErrNotActive), errors.Is(err, fleet.ErrLocked):
			time.Sleep(10 * time.Millisecond) // use ~30 s against the real API
		default:
			log.Fatal(err)
		}
	}
	// Output: deleted
}

func ExampleClient_AttachInstanceVPC() {
	fake := sim.NewVultr()
	ctx := context.Background()
	c := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(fake.Client()))
	vpc, err := c.CreateVPC(ctx, &vultr.VPCCreate{Region: "ewr", Description: "fleet-7f3a"})
	if err != nil {
		log.Fatal(err)
	}
	// A server that has been running for a while (seeded in the fake).
	id, err := fake.SeedServer(sim.VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	// Attach may fail intermittently (fleet.ErrAttachFailed): retry a few
	// times, and trust only what the server's VPC list says.
	for range 3 {
		if err = c.AttachInstanceVPC(ctx, id, vpc.ID); !errors.Is(err, fleet.ErrAttachFailed) {
			break
		}
	}
	if err != nil {
		log.Fatal(err) // e.g. fleet.ErrVPCUnsupported: run without a VPC
	}
	for a, err := range c.ListInstanceVPCs(ctx, id) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(a.ID == vpc.ID)
	}
	// Output: true
}
