package hotaisle

import (
	"context"
	"net/http"
)

// VMSpecs is the hardware of a VM or VM type (swagger VirtualMachineSpecs).
// Every capacity is in BYTES. A VM has no per-disk list, only DiskCapacity.
// Zero fields are omitted when encoded, so a VMSpecs with only some fields set
// is a partial spec.
type VMSpecs struct {
	// CPUCores is the total number of vCPUs (e.g. 13 for 1x MI300X).
	CPUCores uint64 `json:"cpu_cores,omitempty"`
	// RAMCapacity is the memory in bytes (240518168576 = 224 GiB).
	RAMCapacity uint64 `json:"ram_capacity,omitempty"`
	// DiskCapacity is the disk in bytes (13194139533312 = 12 TiB).
	DiskCapacity uint64 `json:"disk_capacity,omitempty"`
	// CPUs is ONE object for a VM (Count processors of Cores each), unlike
	// bare metal's array; nil when absent.
	CPUs *CPU `json:"cpus,omitempty"`
	// GPUs lists the GPUs; empty for a CPU-only VM.
	GPUs []GPU `json:"gpus,omitempty"`
}

// VM is a virtual machine of the team (swagger VirtualMachineDetails, a
// flat object: VirtualMachine fields and VMSpecs side by side). It carries no
// state, price or timestamps: see VMState.
type VM struct {
	// Name is the server-chosen id used in paths, e.g. "enc1-gpuvm022".
	Name string `json:"name"`
	// IPAddress is the primary address; clients SSH to hotaisle@IPAddress:22.
	IPAddress string `json:"ip_address"`
	// Description is free text set with UpdateVM ("" when unset).
	Description string `json:"description"`
	// SSHAccess is an SSH front when the API gives one; nil otherwise.
	SSHAccess *ExternalService `json:"ssh_access,omitempty"`
	VMSpecs
}

// SSHAddr returns "host:port" to SSH to (as user "hotaisle"): SSHAccess when
// present, else IPAddress port 22; "" when neither is known.
func (v *VM) SSHAddr() string { return sshAddr(v.SSHAccess, v.IPAddress) }

// VMProvisionRequest is the body of ProvisionVM (swagger VMProvisionRequest =
// VirtualMachineSpecs + user_data_url), flat on the wire. Set a full spec (an
// offer row's Specs, verbatim) or a partial one, e.g. only GPUs; the server
// assigns an available VM matching it.
type VMProvisionRequest struct {
	VMSpecs
	// UserDataURL optionally points at cloud-init user-data; the VM is then
	// rebuilt with it, which makes provisioning much slower.
	UserDataURL string `json:"user_data_url,omitempty"`
}

// VMState is the answer of GET .../virtual_machines/{vm}/state/.
type VMState struct {
	// State is free text from libvirt: VMRunning, VMShutOff, VMPaused, ...
	State string `json:"state"`
	// Host is the hypervisor the VM runs on, e.g. "enc1-gpuhost07".
	Host string `json:"host"`
}

// Known VM states (the API says "Values can include ...").
const (
	VMRunning  = "running"
	VMShutOff  = "shut off"
	VMPaused   = "paused"
	VMShutdown = "in shutdown"
)

// VMUpdate is the body of UpdateVM (swagger VirtualMachineUpdate). An empty
// Description clears it.
type VMUpdate struct {
	Description string `json:"description"`
}

// ProvisionVM assigns an available VM matching req to the team: POST
// /teams/{team}/virtual_machines/ (200, flat VirtualMachineDetails). It is
// never retried: a failure may hide a success, so look the VM up (ListVMs)
// before trying again. There is no name or description in the request: set a
// label afterwards with UpdateVM. An empty spec is refused before any call
// (fleet.ErrInvalidRequest). Errors: fleet.ErrNoCapacity (404 no available
// VM), fleet.ErrQuotaExceeded (401 team VM limit), fleet.ErrInsufficientBalance
// (402), fleet.ErrForbidden (403, needs team role operator),
// fleet.ErrInvalidRequest (400, 422).
func (c *Client) ProvisionVM(ctx context.Context, req VMProvisionRequest) (*VM, error) {
	s := req.VMSpecs
	if s.CPUCores == 0 && s.RAMCapacity == 0 && s.DiskCapacity == 0 && s.CPUs == nil && len(s.GPUs) == 0 {
		return nil, invalid("provision: empty VM spec")
	}
	p, err := c.teamPath("virtual_machines")
	if err != nil {
		return nil, err
	}
	var vm VM
	if err := c.object(ctx, http.MethodPost, p, nil, req, &vm, "VM name", func() bool { return vm.Name != "" }); err != nil {
		return nil, err
	}
	return &vm, nil
}

// GetVM returns one VM: GET /teams/{team}/virtual_machines/{vm}/.
// fleet.ErrNotFound when the team has no VM of that name.
func (c *Client) GetVM(ctx context.Context, name string) (*VM, error) {
	p, err := c.itemPath("VM", "virtual_machines", name)
	if err != nil {
		return nil, err
	}
	var vm VM
	if err := c.object(ctx, http.MethodGet, p, nil, nil, &vm, "VM name", func() bool { return vm.Name != "" }); err != nil {
		return nil, err
	}
	return &vm, nil
}

// ListVMs returns every VM of the team: GET /teams/{team}/virtual_machines/
// (no pagination).
func (c *Client) ListVMs(ctx context.Context) ([]VM, error) {
	p, err := c.teamPath("virtual_machines")
	if err != nil {
		return nil, err
	}
	return list(ctx, c, p, "VM name", vmName)
}

// GetVMState returns the power state of a VM: GET .../virtual_machines/{vm}/state/.
// "running" comes before sshd accepts connections.
func (c *Client) GetVMState(ctx context.Context, name string) (*VMState, error) {
	p, err := c.itemPath("VM", "virtual_machines", name, "state")
	if err != nil {
		return nil, err
	}
	var st VMState
	if err := c.object(ctx, http.MethodGet, p, nil, nil, &st, "state", func() bool { return st.State != "" }); err != nil {
		return nil, err
	}
	return &st, nil
}

// UpdateVM sets a VM's description: PATCH /teams/{team}/virtual_machines/{vm}/
// (204). Not retried by the HTTP layer.
func (c *Client) UpdateVM(ctx context.Context, name string, u VMUpdate) error {
	p, err := c.itemPath("VM", "virtual_machines", name)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPatch, p, nil, u, nil)
}

// DeleteVM deletes a VM and ends its billing: DELETE
// /teams/{team}/virtual_machines/{vm}/ (204), with ?force=true when force is
// set. The call blocks until the VM is reset (about 20 s). Without force,
// before the offer's MinimumReservationMinutes it fails with
// fleet.ErrMinReservation (400); with force it goes through and the minimum is
// charged, not refunded. fleet.ErrNotFound means the VM is gone, so a DELETE
// that timed out is safe to repeat. Retried on 429 and 5xx gateway errors.
func (c *Client) DeleteVM(ctx context.Context, name string, force bool) error {
	p, err := c.itemPath("VM", "virtual_machines", name)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, p, forceQuery(force), nil, nil)
}
