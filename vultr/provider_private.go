package vultr

import (
	"context"

	"github.com/gpufleet/gpufleet/fleet"
)

// Vultr leaves "internal_ip" blank on some servers that do have a VPC
// address (two or more private networks attached, some bare-metal servers;
// bare metal may not send the key at all), while GET …/{id}/vpcs lists the
// address. The Provider remembers which servers are VPC members (created with
// a VPC, attached by AttachVPC, or seen attached by InstanceVPCs) and, for a
// running member whose answer has no address, reads its attachments once:
// one extra call per such server, none for the others, none once the address
// is known.

// markMember records that a server is attached to a VPC.
func (p *Provider) markMember(id string) {
	p.mu.Lock()
	p.members[id] = true
	p.mu.Unlock()
}

// memberAddr returns what is known of a server's VPC membership: whether it
// is a member, and its VPC id and address once read from its attachments.
func (p *Provider) memberAddr(id string) (member bool, a VPCAttachment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.members[id], p.attached[id]
}

// learn records a server's attachments (the first one with an address).
func (p *Provider) learn(id string, atts []VPCAttachment) {
	if len(atts) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members[id] = true
	for _, a := range atts {
		if _, ok := assignedIP(a.IPAddress); ok {
			p.attached[id] = a
			return
		}
	}
}

// forget drops what is known of a deleted server.
func (p *Provider) forget(id string) {
	p.mu.Lock()
	delete(p.members, id)
	delete(p.attached, id)
	delete(p.metal, id)
	p.mu.Unlock()
}

// fillPrivateIPs completes PrivateIP (and VPCID) of running VPC members
// whose answer had no internal address, from their attachments (see above).
// A failed attachment read leaves the instance as it was; the next read
// tries again.
func (p *Provider) fillPrivateIPs(ctx context.Context, insts []fleet.Instance) {
	for i := range insts {
		in := &insts[i]
		member, a := p.memberAddr(in.ID)
		if !member {
			continue
		}
		if a.IPAddress == "" && in.PrivateIP == "" && in.Running() {
			atts, err := p.attachments(ctx, in.ID, in.Offer.BareMetal)
			if err != nil {
				continue
			}
			p.learn(in.ID, atts)
			_, a = p.memberAddr(in.ID)
		}
		if in.PrivateIP == "" {
			in.PrivateIP = a.IPAddress
		}
		if in.VPCID == "" {
			in.VPCID = a.ID
		}
	}
}

// attachments lists the VPC attachments of an instance or bare-metal server.
func (p *Provider) attachments(ctx context.Context, id string, metal bool) ([]VPCAttachment, error) {
	if metal {
		return Collect(p.c.ListBareMetalVPCs(ctx, id))
	}
	return Collect(p.c.ListInstanceVPCs(ctx, id))
}
