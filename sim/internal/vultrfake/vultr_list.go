package vultrfake

import (
	"slices"
	"time"
)

// vultrList indexes the listed servers of one kind (instances or bare
// metal) so that a page of GET /v2/instances costs O(page + log n), not
// O(all servers): every server not yet gone, in seq order, and the same per
// filter value (label, tag, region, main_ip). A filter's index is built the
// first time a list uses that filter, and kept from then on, so creates pay
// only for the filters clients use. Servers leave when they are gone
// (purge).
type vultrList struct {
	all     []*vultrServer
	by      map[vultrKeyOf][]*vultrServer
	indexed map[string]bool // the filters whose index is built
	dying   []*vultrServer  // deleted, not yet purged
}

// vultrKeyOf is a filter and its value: {"tag", "gpu"}.
type vultrKeyOf struct{ filter, value string }

func newVultrList() *vultrList {
	return &vultrList{by: map[vultrKeyOf][]*vultrServer{}, indexed: map[string]bool{}}
}

// filterKeys are the keys of the built indexes a server is listed under.
func (l *vultrList) filterKeys(s *vultrServer) []vultrKeyOf {
	if len(l.indexed) == 0 {
		return nil
	}
	keys := make([]vultrKeyOf, 0, 3+len(s.tags))
	for _, k := range []vultrKeyOf{{"label", s.label}, {"region", s.region}, {"main_ip", s.mainIP}} {
		if l.indexed[k.filter] {
			keys = append(keys, k)
		}
	}
	if l.indexed["tag"] {
		for _, t := range s.tags {
			keys = append(keys, vultrKeyOf{"tag", t})
		}
	}
	return keys
}

// add lists a new server (its seq is the highest so far).
func (l *vultrList) add(s *vultrServer) {
	l.all = append(l.all, s)
	for _, k := range l.filterKeys(s) {
		l.by[k] = vultrInsert(l.by[k], s)
	}
}

// filtered returns the servers listed under filter=value, building the
// filter's index on first use.
func (l *vultrList) filtered(filter, value string) []*vultrServer {
	if !l.indexed[filter] {
		l.indexed[filter] = true
		for _, s := range l.all {
			for _, k := range l.filterKeys(s) {
				if k.filter == filter {
					l.by[k] = append(l.by[k], s) // l.all is in seq order
				}
			}
		}
	}
	return l.by[vultrKeyOf{filter, value}]
}

// unindex takes s out of the filter indexes under keys.
func (l *vultrList) unindex(s *vultrServer, keys []vultrKeyOf) {
	for _, k := range keys {
		if rest := vultrRemove(l.by[k], s); len(rest) > 0 {
			l.by[k] = rest
		} else {
			delete(l.by, k)
		}
	}
}

// relabel moves s to the indexes of its new label and tags; old are the
// keys it was listed under.
func (l *vultrList) relabel(s *vultrServer, old []vultrKeyOf) {
	l.unindex(s, old)
	for _, k := range l.filterKeys(s) {
		l.by[k] = vultrInsert(l.by[k], s)
	}
}

// purge drops the servers gone at now.
func (l *vultrList) purge(now time.Time) {
	live := l.dying[:0]
	for _, s := range l.dying {
		if !s.gone(now) {
			live = append(live, s)
			continue
		}
		l.all = vultrRemove(l.all, s)
		l.unindex(s, l.filterKeys(s))
	}
	clear(l.dying[len(live):])
	l.dying = live
}

// vultrInsert puts s into list (sorted by seq), once.
func vultrInsert(list []*vultrServer, s *vultrServer) []*vultrServer {
	if len(list) == 0 || list[len(list)-1].seq < s.seq {
		return append(list, s) // the usual case: a new server
	}
	i, found := slices.BinarySearchFunc(list, s.seq, vultrCmpSeq)
	if found {
		return list
	}
	return slices.Insert(list, i, s)
}

// vultrRemove takes s out of list (sorted by seq).
func vultrRemove(list []*vultrServer, s *vultrServer) []*vultrServer {
	if i, found := slices.BinarySearchFunc(list, s.seq, vultrCmpSeq); found {
		return slices.Delete(list, i, i+1)
	}
	return list
}

func vultrCmpSeq(s *vultrServer, seq uint64) int {
	switch {
	case s.seq < seq:
		return -1
	case s.seq > seq:
		return 1
	}
	return 0
}

// vultrVisible is a seq-ordered list as one read sees it: head is listed
// whole; tail holds the visible servers among those committed within the
// read's visibility lag (only those can be hidden).
type vultrVisible struct {
	head, tail []*vultrServer
}

func (v vultrVisible) len() int { return len(v.head) + len(v.tail) }

func (v vultrVisible) at(i int) *vultrServer {
	if i < len(v.head) {
		return v.head[i]
	}
	return v.tail[i-len(v.head)]
}

// visibleOf splits list for a read at now with visibility lag: servers
// created less than lag ago are hidden. Only servers committed within lag
// can be, and those form a suffix of the list.
func visibleOf(list []*vultrServer, now time.Time, lag time.Duration, keep func(*vultrServer) bool) vultrVisible {
	if lag <= 0 && keep == nil {
		return vultrVisible{head: list}
	}
	cut := len(list)
	if lag > 0 {
		for cut > 0 && now.Sub(list[cut-1].committed) < lag {
			cut--
		}
	}
	if keep != nil {
		cut = 0
	}
	out := vultrVisible{head: list[:cut]}
	for _, s := range list[cut:] {
		if (lag <= 0 || now.Sub(s.created) >= lag) && (keep == nil || keep(s)) {
			out.tail = append(out.tail, s)
		}
	}
	return out
}
