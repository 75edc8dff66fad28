package hotaisle

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"time"
)

// CPU is one kind of processor (swagger CPUs = Components + cores, frequency).
type CPU struct {
	// Count is the number of processors of this kind.
	Count uint64 `json:"count"`
	// Manufacturer, e.g. "Intel".
	Manufacturer string `json:"manufacturer,omitempty"`
	// Model, e.g. "Xeon Platinum 8470".
	Model string `json:"model,omitempty"`
	// Cores is the number of cores PER PROCESSOR.
	Cores uint64 `json:"cores,omitempty"`
	// Frequency is the clock in Hz (2000000000 = 2 GHz).
	Frequency uint64 `json:"frequency,omitempty"`
}

// CPUList is the "cpus" array of a bare-metal server. It also decodes a
// single object (the VM shape) as a list of one, and null as empty.
type CPUList []CPU

// UnmarshalJSON accepts an array of CPU objects, one CPU object, or null.
func (l *CPUList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var c CPU
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
		*l = CPUList{c}
		return nil
	}
	var cs []CPU
	if err := json.Unmarshal(b, &cs); err != nil {
		return err
	}
	*l = cs
	return nil
}

// GPU is one kind of GPU (swagger GPUs). Only Count is required by the API:
// Manufacturer and Model may be absent (since swagger 9954b30).
type GPU struct {
	// Count is the number of GPUs of this kind.
	Count uint64 `json:"count"`
	// Manufacturer, e.g. "AMD"; may be "".
	Manufacturer string `json:"manufacturer,omitempty"`
	// Model, e.g. "MI300X"; may be "".
	Model string `json:"model,omitempty"`
}

// DiskType is the "type" of a bare-metal disk.
type DiskType string

// Disk types of the swagger Disks enum.
const (
	DiskNVMe    DiskType = "NVMe"
	DiskSATASSD DiskType = "SATA SSD"
)

// Disk is one kind of drive of a bare-metal server (swagger Disks). No field
// marks the boot disk: tell drives apart by Type, Model and Capacity.
type Disk struct {
	// Count is the number of drives of this kind.
	Count        uint64 `json:"count"`
	Manufacturer string `json:"manufacturer,omitempty"`
	Model        string `json:"model,omitempty"`
	// Type is DiskNVMe or DiskSATASSD.
	Type DiskType `json:"type"`
	// Capacity is the size of ONE drive in bytes.
	Capacity uint64 `json:"capacity"`
}

// MemoryModule is one kind of DIMM of a bare-metal server (swagger MemoryModules).
type MemoryModule struct {
	Count        uint64 `json:"count"`
	Manufacturer string `json:"manufacturer,omitempty"`
	Model        string `json:"model,omitempty"`
	// Capacity is the size of ONE module in bytes.
	Capacity uint64 `json:"capacity"`
}

// ExternalService is how a server is reached from outside (swagger
// ExternalService, the "ssh_access" field). For bare metal it is a shared
// front host with one port per server (e.g. ssh.hotaisle.cloud:22013).
type ExternalService struct {
	// IPAddress is the public address (a string; may be "").
	IPAddress string `json:"ip_address"`
	// Port is the TCP port, e.g. 22.
	Port int64 `json:"port"`
	// DNSName is the host name when the API gives one.
	DNSName string `json:"dns_name,omitempty"`
}

// sshAddr returns "host:port" for SSH: ssh_access when it names a host
// (its IP, else its DNS name; port 22 when 0), else ip:22.
func sshAddr(access *ExternalService, ip string) string {
	if access != nil {
		host := access.IPAddress
		if host == "" {
			host = access.DNSName
		}
		if host != "" {
			port := access.Port
			if port == 0 {
				port = 22
			}
			return net.JoinHostPort(host, strconv.FormatInt(port, 10))
		}
	}
	if ip == "" {
		return ""
	}
	return net.JoinHostPort(ip, "22")
}

// flexTime decodes an RFC 3339 date-time leniently: "" and null are the zero
// time, and so is an unparsable value (timestamps are informative only).
type flexTime time.Time

func (t *flexTime) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil || s == "" {
		*t = flexTime{}
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		v = time.Time{}
	}
	*t = flexTime(v)
	return nil
}
