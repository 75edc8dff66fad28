package vultr

import (
	"context"

	"github.com/gpufleet/gpufleet/fleet"
)

// Vultr leaves "internal_ip" blank on some servers that do have a VPC
// address (two or more private networks attached, some bare-metal servers;
// bare metal may not send the key at all), while GET …/{id}/vpcs lists the
// address. The Provider remembers which servers are VPC members (created with
// a VPC, attached by AttachVPC, or seen attached by InstanceVPCs), and which
// VPC each was asked to join. For a running server whose answer has no
// address it reads the attachments once when it is a member, or when it
// carries a fleet label and its membership is not known (a server adopted
// after a restart): one extra call per such server, none for the others,
// none once the attachments are known. The address given is the one on the
// VPC the server was asked to join; else on the VPC whose label names the
// server's fleet; else the only address listed; else none (an address on
// another fleet's network would be worse than none).

// markMember records that a server joined (or was asked to join) vpcID.
func (p *Provider) markMember(id, vpcID string) {
	p.mu.Lock()
	p.members[id] = vpcID
	delete(p.atts, id) // read again: the new attachment may not be there yet
	p.mu.Unlock()
}

// noteVPCs remembers which fleet each labelled VPC serves.
func (p *Provider) noteVPCs(vpcs ...fleet.VPC) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range vpcs {
		if v.Fleet != "" {
			p.vpcFleet[v.ID] = v.Fleet
		}
	}
}

// learn records a server's attachments.
func (p *Provider) learn(id string, atts []VPCAttachment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.atts[id] = atts
	if _, ok := p.members[id]; !ok && len(atts) > 0 {
		p.members[id] = ""
	}
}

// forget drops what is known of a deleted server.
func (p *Provider) forget(id string) {
	p.mu.Lock()
	delete(p.members, id)
	delete(p.atts, id)
	delete(p.metal, id)
	p.mu.Unlock()
}

// needsRead reports whether a server's attachments should be read now: no
// address in its answer, running, a member or a labelled server of unknown
// membership, and no attachment with an address known yet.
func (p *Provider) needsRead(in *fleet.Instance) bool {
	if in.PrivateIP != "" || !in.Running() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	want, member := p.members[in.ID]
	atts, read := p.atts[in.ID]
	if !read {
		return member || in.Fleet != ""
	}
	return want != "" && p.pickLocked(in, atts).IPAddress == "" // the VPC asked for has no address yet
}

// pick returns the attachment whose address a server reports (see above).
func (p *Provider) pick(in *fleet.Instance) VPCAttachment {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pickLocked(in, p.atts[in.ID])
}

func (p *Provider) pickLocked(in *fleet.Instance, atts []VPCAttachment) VPCAttachment {
	var addressed []VPCAttachment
	for _, a := range atts {
		if _, ok := assignedIP(a.IPAddress); ok {
			addressed = append(addressed, a)
		}
	}
	if want := p.members[in.ID]; want != "" {
		for _, a := range addressed {
			if a.ID == want {
				return a
			}
		}
		return VPCAttachment{}
	}
	var ours []VPCAttachment
	for _, a := range addressed {
		if in.Fleet != "" && p.vpcFleet[a.ID] == in.Fleet {
			ours = append(ours, a)
		}
	}
	switch {
	case len(ours) == 1:
		return ours[0]
	case len(addressed) == 1:
		return addressed[0]
	}
	return VPCAttachment{}
}

// fillPrivateIPs completes PrivateIP (and VPCID) of running VPC members
// whose answer had no internal address, from their attachments (see above).
// A failed attachment read leaves the instance as it was; the next read
// tries again.
func (p *Provider) fillPrivateIPs(ctx context.Context, insts []fleet.Instance) {
	for i := range insts {
		in := &insts[i]
		if p.needsRead(in) {
			if atts, err := p.attachments(ctx, in.ID, in.Offer.BareMetal); err == nil {
				p.learn(in.ID, atts)
			}
		}
		if in.PrivateIP != "" {
			continue
		}
		a := p.pick(in)
		in.PrivateIP = a.IPAddress
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
