package sim_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vultr/govultr/v3"

	"github.com/gpufleet/gpufleet/sim"
)

func createN5(t *testing.T, c *govultr.Client, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		inst, _, err := c.Instance.Create(context.Background(), &govultr.InstanceCreateReq{Region: "ewr", Plan: "vc2-1c-1gb",
			Label: fmt.Sprintf("%s-%d", prefix, i), OsID: 1743, Tags: []string{"t5"}})
		require.NoError(t, err)
		ids = append(ids, inst.ID)
	}
	return ids
}

// govultr pages through many servers with per_page 1, 2 and 3 (with and
// without a tag filter): every server exactly once, meta.total right.
func TestGovultrPagesEveryServerOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newGovultr(t, sim.NewVultr(sim.WithVultrRateLimit(0, 0)))
		ids := createN5(t, c, "p", 23)
		for _, tag := range []string{"", "t5"} {
			for per := 1; per <= 3; per++ {
				seen := map[string]int{}
				opts := &govultr.ListOptions{PerPage: per, Tag: tag}
				pages := 0
				for {
					list, meta, _, err := c.Instance.List(ctx, opts)
					require.NoError(t, err)
					pages++
					require.LessOrEqual(t, len(list), per)
					assert.Equal(t, len(ids), meta.Total)
					for _, in := range list {
						seen[in.ID]++
					}
					if meta.Links.Next == "" {
						break
					}
					opts.Cursor = meta.Links.Next
					require.Less(t, pages, 100)
				}
				assert.Equal(t, (len(ids)+per-1)/per, pages, "per_page %d tag %q", per, tag)
				for _, id := range ids {
					assert.Equal(t, 1, seen[id], "server %s seen %d times (per_page %d tag %q)", id, seen[id], per, tag)
				}
				assert.Len(t, seen, len(ids))
			}
		}
	})
}

// Servers created and deleted between pages: a server live through the
// whole walk is seen exactly once; none is seen twice (deleted or created
// during the walk included).
func TestGovultrCursorAcrossChanges(t *testing.T) {
	for per := 1; per <= 3; per++ {
		t.Run(fmt.Sprint(per), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				c := newGovultr(t, sim.NewVultr(sim.WithVultrRateLimit(0, 0)))
				ids := createN5(t, c, "c", 15)
				time.Sleep(10 * time.Minute) // active: deletable
				deleted := map[string]bool{}
				seen := map[string]int{}
				opts := &govultr.ListOptions{PerPage: per}
				var added []string
				for page := 0; ; page++ {
					list, meta, _, err := c.Instance.List(ctx, opts)
					require.NoError(t, err)
					for _, in := range list {
						seen[in.ID]++ // a deleted server may still be listed while pending destruction
					}
					if meta.Links.Next == "" {
						break
					}
					opts.Cursor = meta.Links.Next
					require.Less(t, page, 100)
					switch page % 3 {
					case 0: // delete the first server of the next page (unseen) and one seen
						next := ""
						for _, id := range ids {
							if seen[id] == 0 && !deleted[id] {
								next = id
								break
							}
						}
						if next != "" {
							require.NoError(t, c.Instance.Delete(ctx, next))
							deleted[next] = true
						}
						for _, id := range ids {
							if seen[id] == 1 && !deleted[id] {
								require.NoError(t, c.Instance.Delete(ctx, id))
								deleted[id] = true
								break
							}
						}
					case 1:
						added = append(added, createN5(t, c, fmt.Sprintf("n%d", page), 1)...)
					}
				}
				for _, id := range append(append([]string{}, ids...), added...) {
					assert.LessOrEqual(t, seen[id], 1, "server %s seen twice", id)
					if !deleted[id] && !contains5(added, id) {
						assert.Equal(t, 1, seen[id], "server %s live throughout but not listed", id)
					}
				}
			})
		})
	}
}

func contains5(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
