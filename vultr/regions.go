package vultr

import (
	"context"
	"errors"
	"iter"
	"net/url"
)

// Region is a Vultr location of GET /v2/regions.
type Region struct {
	ID           string   `json:"id"` // e.g. "ewr"
	City         string   `json:"city"`
	Country      string   `json:"country"`      // ISO 3166-1 alpha-2
	Continent    string   `json:"continent"`    // e.g. "North America"
	Options      []string `json:"options"`      // e.g. "ddos_protection"
	Connectivity []string `json:"connectivity"` // e.g. "public_ip", "nat_gateway"
}

type regionsPage struct {
	Regions *[]Region `json:"regions"`
	Meta    *Meta     `json:"meta"`
}

func (p *regionsPage) items() ([]Region, error) {
	return pageItems(p.Regions, "regions", func(v *Region) string { return v.ID })
}

func (p *regionsPage) meta() *Meta { return p.Meta }

// ListRegions iterates over GET /v2/regions, all pages.
func (c *Client) ListRegions(ctx context.Context) iter.Seq2[Region, error] {
	return list[Region, *regionsPage](ctx, c, "/v2/regions", nil)
}

// RegionAvailability returns the plan ids that can be deployed in region now
// (GET /v2/regions/{id}/availability, no pagination). planType narrows it to
// a family ("vc2", "vdc", "vhf", "vbm", ...); "" asks for all. A sold-out plan
// is omitted (creating it fails with fleet.ErrNoCapacity).
func (c *Client) RegionAvailability(ctx context.Context, region, planType string) ([]string, error) {
	if err := requireID("region", region); err != nil {
		return nil, err
	}
	q := url.Values{}
	setIf(q, "type", planType)
	var out struct {
		AvailablePlans *[]string `json:"available_plans"`
	}
	path := "/v2/regions/" + pathEscape(region) + "/availability"
	if err := c.do(ctx, "GET", path, q, nil, &out); err != nil {
		return nil, err
	}
	if out.AvailablePlans == nil {
		return nil, c.api.DecodeError("GET", path, errors.New(`the answer has no "available_plans" list`))
	}
	return *out.AvailablePlans, nil
}
