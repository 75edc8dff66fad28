package vultrfake

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/sshhost"
)

// vultrIPPrefixes are the /16 prefixes main_ip is drawn from, per region
// (other regions use 100.74.0.0/16). They lie in 100.64.0.0/10, the shared
// address space no public server has: a suite that connects to a fake's
// main_ip outside the in-process network reaches nobody's server (Vultr's
// real blocks, 45.77.0.0/16 and the like, belong to other customers).
var vultrIPPrefixes = map[string][2]byte{
	"ewr": {100, 64}, "ord": {100, 65}, "atl": {100, 66}, "dfw": {100, 67}, "sea": {100, 68},
	"sjc": {100, 69}, "lax": {100, 70}, "ams": {100, 71}, "fra": {100, 72}, "nrt": {100, 73},
}

// assignAddresses draws main_ip (unique among live servers and the SSH
// network) and its gateway, which it returns, and sets IPv6 when asked and
// the bare-metal MAC address, from the seeded source. Callers hold v.mu.
func (v *Vultr) assignAddresses(srv *vultrServer, ipv6 bool) (mainIP, gateway netip.Addr) {
	pre, ok := vultrIPPrefixes[srv.region]
	if !ok {
		pre = [2]byte{100, 74}
	}
	if ip, gw := v.reusableIP(srv.region); ip != "" {
		mainIP, _ = netip.ParseAddr(ip)
		gateway, _ = netip.ParseAddr(gw)
	}
	var buf [24]byte
	for tries := 0; !mainIP.IsValid(); tries++ {
		x := v.randUint64()
		b := 64 + (pre[1]-64+byte(tries/64))%64 // a crowded /16: spill into the next ones, inside 100.64.0.0/10
		c, d := byte(x), byte(2+(x>>8)%252)
		key := [4]byte{pre[0], b, c, d}
		if v.st.usedIPs[key] {
			continue
		}
		ip := netip.AddrFrom4(key)
		if sshhost.HasExact(v.net, string(append(ip.AppendTo(buf[:0]), ":22"...))) {
			continue
		}
		v.st.usedIPs[key] = true
		mainIP, gateway = ip, netip.AddrFrom4([4]byte{pre[0], b, c &^ 1, 1})
	}
	if ipv6 {
		x := v.randUint64()
		pre := fmt.Sprintf("2001:db8:%x:%x", x&0xffff, (x>>16)&0xffff) // the documentation prefix
		srv.v6Net = pre + "::"
		srv.v6IP = fmt.Sprintf("%s:5400:4ff:fe%02x:%x", pre, (x>>32)&0xff, (x>>40)&0xffff) // a /64 and a SLAAC-like host part
	}
	if srv.metal {
		srv.macAddr = int64(v.randUint64()&0xffffffffff) | 0x020000000000
	}
	return mainIP, gateway
}

// reusableIP returns the main_ip and gateway of the most recently released
// server of region (gone, its address not taken again), when
// ReuseReleasedIPs is on. Callers hold v.mu.
func (v *Vultr) reusableIP(region string) (ip, gateway string) {
	if !v.st.reuseIPs {
		return "", ""
	}
	now := v.clock.Now()
	rel := v.st.released
	for i := len(rel) - 1; i >= 0; i-- {
		old := rel[i]
		if old.region != region || !old.gone(now) || v.ipHeld(old.mainIP, now) {
			continue
		}
		v.st.released = append(rel[:i:i], rel[i+1:]...)
		return old.mainIP, old.gateway
	}
	return "", ""
}

// ipHeld reports whether a server not yet gone has main_ip ip. Callers
// hold v.mu.
func (v *Vultr) ipHeld(ip string, now time.Time) bool {
	for _, l := range v.st.lists {
		l.purge(now)
		if len(l.filtered("main_ip", ip)) > 0 {
			return true
		}
	}
	return false
}

// ReuseReleasedIPs makes servers created from now on (on true) take the
// main_ip of the most recently destroyed server of their region once it is
// gone, as Vultr hands released addresses to new servers: the new server's
// SSH host has a new host key at the old address, so a client pinning host
// keys by address sees a mismatch. false restores fresh addresses.
func (v *Vultr) ReuseReleasedIPs(on bool) {
	v.mu.Lock()
	v.st.reuseIPs = on
	v.unlock()
}

// newVPC creates a VPC; subnet "" and mask 0 mean auto-assign a /20 in
// 10.0.0.0/8 not used by another auto-assigned VPC of the region. Callers
// hold v.mu.
func (v *Vultr) newVPC(region, desc, subnet string, mask int, now time.Time) *vultrVPC {
	if subnet == "" {
		mask = 20
		for {
			x := v.randUint64()
			subnet = fmt.Sprintf("10.%d.%d.0", 1+x%254, ((x>>8)%16)*16)
			if !v.st.subnets[region+"/"+subnet] {
				break
			}
		}
	}
	v.st.subnets[region+"/"+subnet] = true
	vpc := &vultrVPC{seq: v.st.next(), id: v.newUUID(), region: region, desc: desc,
		subnet: subnet, mask: mask, created: now, nextHost: 3}
	v.st.vpcs[vpc.id] = vpc
	v.st.vpcList = append(v.st.vpcList, vpc)
	return vpc
}

// regionVPC returns the region's oldest live VPC, creating one if there is
// none (enable_vpc, SPEC). Callers hold v.mu.
func (v *Vultr) regionVPC(region string, now time.Time) *vultrVPC {
	var best *vultrVPC
	for _, vpc := range v.st.vpcs {
		if vpc.region == region && vpc.deleted.IsZero() && vultrHasFree(vpc) && (best == nil || vpc.seq < best.seq) {
			best = vpc
		}
	}
	if best == nil {
		best = v.newVPC(region, "", "", 0, now)
	}
	return best
}

// vultrHasFree reports whether the VPC has an address left for a server.
func vultrHasFree(vpc *vultrVPC) bool {
	return uint64(vpc.nextHost) < (uint64(1)<<(32-vpc.mask))-1
}

// newAttachment gives the server the VPC's next address and a MAC address.
// Callers hold v.mu and have checked vultrHasFree.
func (v *Vultr) newAttachment(vpc *vultrVPC, now time.Time) *vultrAttachment {
	base, _ := netip.ParseAddr(vpc.subnet)
	b := base.As4()
	n := binary.BigEndian.Uint32(b[:]) + vpc.nextHost
	vpc.nextHost++
	binary.BigEndian.PutUint32(b[:], n)
	x := v.randUint64()
	mac := fmt.Sprintf("5a:01:%02x:%02x:%02x:%02x", byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	return &vultrAttachment{vpc: vpc, ip: netip.AddrFrom4(b).String(), mac: mac, added: now}
}
