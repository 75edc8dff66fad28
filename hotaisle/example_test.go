package hotaisle_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
)

// newExampleClient returns a client on an in-memory fake whose VM DELETE does
// not block, so that the examples run in real time. Against the real API,
// drop WithHTTPClient.
func newExampleClient() (*sim.HotAisle, *hotaisle.Client) {
	h := sim.NewHotAisle(sim.WithHotAisleDeleteDelay(0))
	return h, hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()))
}

func ExampleNew() {
	c := hotaisle.New("my-api-key", "acme",
		hotaisle.WithRateLimit(5, 5),
		hotaisle.WithRetryPolicy(hotaisle.RetryPolicy{Attempts: 3}))
	fmt.Println(c) // the key is never printed
	// Output: hotaisle.Client{team: "acme", baseURL: "https://admin.hotaisle.app/api", key: [redacted]}
}

func ExampleClient_Check() {
	_, c := newExampleClient()
	team, err := c.Check(context.Background(), hotaisle.RoleOperator)
	switch {
	case errors.Is(err, fleet.ErrUnauthorized):
		log.Fatal("bad API key")
	case errors.Is(err, fleet.ErrNotFound):
		log.Fatal("unknown team: ", err)
	case errors.Is(err, fleet.ErrForbidden):
		log.Fatal("the key lacks the operator role: ", err)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(team.Handle, "VM limit:", team.MaximumVirtualMachines)
	// Output: sim-team VM limit: 10
}

func ExampleClient_ListVMTypes() {
	_, c := newExampleClient()
	rows, err := c.ListVMTypes(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		fmt.Printf("%dx %s, %d cores, %d GiB RAM: $%.2f/h, min %d min, %d left\n",
			r.Specs.GPUs[0].Count, r.Specs.GPUs[0].Model, r.Specs.CPUCores, r.Specs.RAMCapacity>>30,
			float64(r.OnDemandPrice)/100, r.MinimumReservationMinutes, r.Quantity)
	}
	// Output:
	// 1x MI300X, 13 cores, 224 GiB RAM: $2.99/h, min 30 min, 8 left
	// 1x MI300X, 8 cores, 224 GiB RAM: $2.99/h, min 30 min, 0 left
	// 2x MI300X, 26 cores, 448 GiB RAM: $5.98/h, min 60 min, 4 left
	// 4x MI300X, 52 cores, 896 GiB RAM: $11.96/h, min 60 min, 2 left
	// 8x MI300X, 104 cores, 1792 GiB RAM: $23.92/h, min 60 min, 1 left
}

func ExampleClient_ProvisionVM() {
	_, c := newExampleClient()
	ctx := context.Background()
	// A partial spec: any VM with one MI300X.
	vm, err := c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{
		GPUs: []hotaisle.GPU{{Count: 1, Manufacturer: "AMD", Model: "MI300X"}}}})
	if errors.Is(err, fleet.ErrNoCapacity) {
		log.Fatal("sold out")
	} else if err != nil {
		log.Fatal(err) // never retried blindly: list the VMs before trying again
	}
	// The request has no name: label the VM afterwards.
	if err := c.UpdateVM(ctx, vm.Name, hotaisle.VMUpdate{Description: "fleet=demo"}); err != nil {
		log.Fatal(err)
	}
	st, err := c.GetVMState(ctx, vm.Name)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(vm.CPUCores, "cores,", st.State)
	// Output: 13 cores, running
}

func ExampleClient_DeleteVM() {
	_, c := newExampleClient()
	ctx := context.Background()
	vm, err := c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{CPUCores: 13}})
	if err != nil {
		log.Fatal(err)
	}
	err = c.DeleteVM(ctx, vm.Name, false)
	if errors.Is(err, fleet.ErrMinReservation) {
		fmt.Println("within the minimum reservation; forcing (the minimum is charged)")
		err = c.DeleteVM(ctx, vm.Name, true)
	}
	if err != nil && !errors.Is(err, fleet.ErrNotFound) { // not found: already gone
		log.Fatal(err)
	}
	_, err = c.GetVM(ctx, vm.Name)
	fmt.Println("gone:", errors.Is(err, fleet.ErrNotFound))
	// Output:
	// within the minimum reservation; forcing (the minimum is charged)
	// gone: true
}

func ExampleClient_ReserveBareMetal() {
	_, c := newExampleClient()
	ctx := context.Background()
	rows, err := c.ListBareMetalTypes(ctx)
	if err != nil {
		log.Fatal(err)
	}
	bm, err := c.ReserveBareMetal(ctx, hotaisle.BareMetalReservation{
		Description: "training node", Specs: rows[0].Specs})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range bm.Disks {
		fmt.Printf("%d x %s %d GB\n", d.Count, d.Type, d.Capacity/1e9)
	}
	fmt.Println("SSH through the front host:", bm.SSHAccess != nil)
	fmt.Println(c.ReleaseBareMetal(ctx, bm.Name, true))
	// Output:
	// 2 x SATA SSD 480 GB
	// 8 x NVMe 15360 GB
	// SSH through the front host: true
	// <nil>
}

func ExampleClient_AddSSHKey() {
	_, c := newExampleClient()
	ctx := context.Background()
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKL6L0o1W6LpB6UwCenjfK3fesfmagi6B2MfVTBys/JM ci@build"
	_, existed, err := c.AddSSHKey(ctx, key)
	fmt.Println(existed, err)
	k, existed, err := c.AddSSHKey(ctx, key) // 409: already there
	fmt.Println(existed, err)
	fmt.Println(c.DeleteSSHKey(ctx, k.Fingerprint))
	// Output:
	// false <nil>
	// true <nil>
	// <nil>
}
