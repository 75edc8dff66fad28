package main

import (
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// job is one fleet and the simulated work its nodes do once ready.
type job struct {
	spec fleet.Spec
	work time.Duration // how long every node is busy
	vpc  bool          // start the work only once every node is in the fleet's VPC
}

// Work per fleet, in cloud time. The Vultr job is short enough to end inside
// the first paid hour; the Hot Aisle VM job ends inside the 30-minute minimum
// reservation, so both releases wait for a reservation window.
const (
	trainWork = 2 * time.Minute
	inferWork = 10 * time.Minute
	metalWork = 30 * time.Minute
)

// jobs returns the fleets to run on the providers available: a Vultr cluster
// of MI300X bare metal in one VPC, a Hot Aisle MI300X VM fleet, and Hot
// Aisle bare metal when asked for. Every fleet logs in with key.
func jobs(cfg config, have map[string]bool, key fleet.PrivateKey, authorized string) []job {
	var out []job
	add := func(j job) {
		if have[j.spec.Requirements.Providers[0]] && j.spec.Nodes > 0 {
			j.spec.SSHKeys, j.spec.PrivateKey = []string{authorized}, key
			out = append(out, j)
		}
	}
	add(job{work: trainWork, vpc: true, spec: fleet.Spec{
		Name: "train", Nodes: cfg.nodes, Placement: fleet.PlacementCluster,
		Requirements: fleet.Requirements{Providers: []string{fleet.ProviderVultr}, InstanceTypes: []string{cfg.vultrPlan}},
	}})
	add(job{work: inferWork, spec: fleet.Spec{
		Name: "infer", Nodes: cfg.hotNodes,
		Requirements: fleet.Requirements{Providers: []string{fleet.ProviderHotAisle}, GPUModel: "MI300X", GPUCount: 1, BareMetal: fleet.No},
	}})
	if cfg.bareMetal {
		add(job{work: metalWork, spec: fleet.Spec{
			Name: "metal", Nodes: 1,
			Requirements: fleet.Requirements{Providers: []string{fleet.ProviderHotAisle}, GPUModel: "MI300X", BareMetal: fleet.Yes},
		}})
	}
	return out
}

// requirements are what the Manager asks the catalog for on behalf of j.
func (j job) requirements() fleet.Requirements {
	r := j.spec.Requirements
	r.Cluster = j.spec.Placement == fleet.PlacementCluster
	return r
}
