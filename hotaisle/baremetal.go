package hotaisle

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// BareMetalSpecs is the hardware of a bare-metal server or type (swagger
// BareMetalServerSpecs). Every capacity is in BYTES. Zero fields are omitted
// when encoded, so a reservation may carry a partial spec.
type BareMetalSpecs struct {
	// CPUCores is the total number of cores (e.g. 104).
	CPUCores uint64 `json:"cpu_cores,omitempty"`
	// RAMCapacity is the memory in bytes (2199023255552 = 2 TiB).
	RAMCapacity uint64 `json:"ram_capacity,omitempty"`
	// DiskCapacity is the total of all drives in bytes.
	DiskCapacity uint64 `json:"disk_capacity,omitempty"`
	// CPUs is an ARRAY for bare metal (one entry per processor kind).
	CPUs CPUList `json:"cpus,omitempty"`
	// Disks lists the drives; boot (SATA SSD / M.2) and data (NVMe) alike.
	Disks []Disk `json:"disks,omitempty"`
	// GPUs lists the GPUs.
	GPUs []GPU `json:"gpus,omitempty"`
	// MemoryModules lists the DIMMs.
	MemoryModules []MemoryModule `json:"memory_modules,omitempty"`
}

// OSStatus is the OS install progress of a bare-metal server (swagger
// BareMetalServerlOSStatus, sic).
type OSStatus struct {
	// OSSelection is the installed image, e.g. "ubuntu-2404.4" (read-only).
	OSSelection string `json:"os_selection"`
	// OSInstallStatus moves shutting_down → ac_reset → bios_reset →
	// booting_installer → installing_os → finalizing_os → first_boot →
	// first_boot_tasks → OSInstalled, or OSFailed from any step.
	OSInstallStatus string `json:"os_install_status"`
	// LastImagingUpdate is stamped at every step; zero when absent, "" or
	// unparsable.
	LastImagingUpdate time.Time `json:"last_imaging_update"`
}

// OS install statuses that end a reinstall.
const (
	OSInstalled = "installed"
	OSFailed    = "failed"
)

// UnmarshalJSON decodes leniently: a date-time that is "", null or not
// RFC 3339 is the zero time.
func (s *OSStatus) UnmarshalJSON(b []byte) error {
	type plain OSStatus
	v := struct {
		*plain
		LastImagingUpdate flexTime `json:"last_imaging_update"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.LastImagingUpdate = time.Time(v.LastImagingUpdate)
	return nil
}

// BareMetal is a reserved bare-metal server (swagger BareMetalServerDetails and
// BareMetalServerReservationResponse: one flat object).
type BareMetal struct {
	// Name is the id used in paths, e.g. "enc1-gpu012".
	Name string `json:"name"`
	// IPAddress is the PRIVATE primary address; reach the server via SSHAccess.
	IPAddress string `json:"ip_address"`
	// Manufacturer and Model of the chassis, e.g. "Dell", "PowerEdge XE9680".
	Manufacturer string `json:"manufacturer"`
	Model        string `json:"model"`
	// Description is free text set at reserve or with UpdateBareMetal.
	Description string `json:"description"`
	// SSHAccess is the shared SSH front (e.g. ssh.hotaisle.cloud:22013); nil
	// when absent.
	SSHAccess *ExternalService `json:"ssh_access,omitempty"`
	// SupportAccessEnabled tells whether Hot Aisle support may log in.
	SupportAccessEnabled bool `json:"support_access_enabled"`
	BareMetalSpecs
	// OSStatus is the OS install progress; nil when absent.
	OSStatus *OSStatus `json:"os_status,omitempty"`
}

// SSHAddr returns "host:port" to SSH to: SSHAccess when present, else
// IPAddress port 22; "" when neither is known.
func (b *BareMetal) SSHAddr() string { return sshAddr(b.SSHAccess, b.IPAddress) }

// BareMetalReservation is the body of ReserveBareMetal (swagger
// BareMetalServerReservation): the specs are wrapped in "specs", unlike the VM
// request.
type BareMetalReservation struct {
	// Description labels the server.
	Description string `json:"description,omitempty"`
	// Specs is the wanted hardware, full or partial (e.g. only cpu_cores,
	// ram_capacity, disk_capacity).
	Specs BareMetalSpecs `json:"specs"`
}

// BareMetalUpdate is the body of UpdateBareMetal (swagger BareMetalServerUpdate).
type BareMetalUpdate struct {
	Description string `json:"description"`
}

// Power states of a bare-metal server, as iDRAC reports them.
const (
	PowerOn  = "On"
	PowerOff = "Off"
)

// ReserveBareMetal reserves a server: POST /teams/{team}/bare_metal/ (201).
// Eight hours are billed at once. Never retried: look the server up
// (ListBareMetal, by description) before trying again. Errors:
// fleet.ErrNoCapacity (404 no available servers), fleet.ErrQuotaExceeded
// (403 tenant limit), fleet.ErrInsufficientBalance (402), fleet.ErrForbidden
// (403), fleet.ErrInvalidRequest (400 invalid specifications or insufficient
// resources, 422).
func (c *Client) ReserveBareMetal(ctx context.Context, r BareMetalReservation) (*BareMetal, error) {
	p, err := c.teamPath("bare_metal")
	if err != nil {
		return nil, err
	}
	var bm BareMetal
	if err := c.object(ctx, http.MethodPost, p, nil, r, &bm, "server name", func() bool { return bm.Name != "" }); err != nil {
		return nil, err
	}
	return &bm, nil
}

// GetBareMetal returns one server: GET /teams/{team}/bare_metal/{server}/.
// fleet.ErrNotFound when the team has no server of that name.
func (c *Client) GetBareMetal(ctx context.Context, name string) (*BareMetal, error) {
	p, err := c.itemPath("server", "bare_metal", name)
	if err != nil {
		return nil, err
	}
	var bm BareMetal
	if err := c.object(ctx, http.MethodGet, p, nil, nil, &bm, "server name", func() bool { return bm.Name != "" }); err != nil {
		return nil, err
	}
	return &bm, nil
}

// ListBareMetal returns every server of the team: GET /teams/{team}/bare_metal/.
func (c *Client) ListBareMetal(ctx context.Context) ([]BareMetal, error) {
	p, err := c.teamPath("bare_metal")
	if err != nil {
		return nil, err
	}
	return list(ctx, c, p, "server name", serverName)
}

// GetBareMetalPower returns PowerOn or PowerOff: GET .../bare_metal/{server}/power/.
func (c *Client) GetBareMetalPower(ctx context.Context, name string) (string, error) {
	p, err := c.itemPath("server", "bare_metal", name, "power")
	if err != nil {
		return "", err
	}
	var st struct {
		State string `json:"state"`
	}
	if err := c.object(ctx, http.MethodGet, p, nil, nil, &st, "state", func() bool { return st.State != "" }); err != nil {
		return "", err
	}
	return st.State, nil
}

// PowerOnBareMetal turns a server on if it is off: POST
// /teams/{team}/bare_metal/{server}/power/power_on/ (204). Never retried.
// fleet.ErrNotFound when the team has no server of that name.
func (c *Client) PowerOnBareMetal(ctx context.Context, name string) error {
	p, err := c.itemPath("server", "bare_metal", name, "power", "power_on")
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, p, nil, nil, nil)
}

// UpdateBareMetal sets a server's description: PATCH
// /teams/{team}/bare_metal/{server}/ (204). Not retried by the HTTP layer.
func (c *Client) UpdateBareMetal(ctx context.Context, name string, u BareMetalUpdate) error {
	p, err := c.itemPath("server", "bare_metal", name)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPatch, p, nil, u, nil)
}

// ReleaseBareMetal gives a server back: DELETE /teams/{team}/bare_metal/{server}/
// (204), with ?force=true when force is set. Without force, before the
// minimum usage (8 h) it fails with fleet.ErrMinReservation (400 "server
// cannot be released due to minimum usage requirement"); with force it goes
// through and the prepaid minimum is not refunded. fleet.ErrNotFound means
// gone ("server not found or not assigned to team"). Retried on 429 and 5xx
// gateway errors.
func (c *Client) ReleaseBareMetal(ctx context.Context, name string, force bool) error {
	p, err := c.itemPath("server", "bare_metal", name)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, p, forceQuery(force), nil, nil)
}
