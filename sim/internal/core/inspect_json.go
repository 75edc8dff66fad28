package core

import (
	"encoding/json"
	"fmt"
	"time"
)

// The inspection types encode to JSON for the standalone server's admin
// API with one duration format, Go duration strings ("1h0m0s", "90s"),
// and null for a time that has not come ("Deleted": null while live).

// resourceJSON is Resource with Deleted as a pointer (null while live).
type resourceJSON struct {
	Kind        string
	ID          string
	Name        string
	Label       string
	Tags        []string
	Description string
	Plan        string
	Region      string
	State       string
	Power       string
	Created     time.Time
	Deleted     *time.Time
}

// MarshalJSON encodes the resource with "Deleted": null while it is live.
func (r Resource) MarshalJSON() ([]byte, error) {
	j := resourceJSON{Kind: r.Kind, ID: r.ID, Name: r.Name, Label: r.Label, Tags: r.Tags,
		Description: r.Description, Plan: r.Plan, Region: r.Region, State: r.State, Power: r.Power,
		Created: r.Created, Deleted: timeOrNil(r.Deleted)}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *Resource) UnmarshalJSON(b []byte) error {
	var j resourceJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Resource{Kind: j.Kind, ID: j.ID, Name: j.Name, Label: j.Label, Tags: j.Tags,
		Description: j.Description, Plan: j.Plan, Region: j.Region, State: j.State, Power: j.Power,
		Created: j.Created, Deleted: timeOrZero(j.Deleted)}
	return nil
}

// chargeJSON is Charge with Billed as a Go duration string.
type chargeJSON struct {
	ResourceID  string
	Kind        string
	Plan        string
	RateUSD     float64
	From        time.Time
	To          time.Time
	Billed      string
	USD         float64
	Live        bool
	Unrefunded  float64
	Description string
}

// MarshalJSON encodes the charge with "Billed" as a Go duration string
// ("2h0m0s").
func (c Charge) MarshalJSON() ([]byte, error) {
	return json.Marshal(chargeJSON{ResourceID: c.ResourceID, Kind: c.Kind, Plan: c.Plan, RateUSD: c.RateUSD,
		From: c.From, To: c.To, Billed: c.Billed.String(), USD: c.USD, Live: c.Live, Unrefunded: c.Unrefunded,
		Description: c.Description})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (c *Charge) UnmarshalJSON(b []byte) error {
	var j chargeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	billed, err := parseJSONDuration("Billed", j.Billed)
	if err != nil {
		return err
	}
	*c = Charge{ResourceID: j.ResourceID, Kind: j.Kind, Plan: j.Plan, RateUSD: j.RateUSD, From: j.From,
		To: j.To, Billed: billed, USD: j.USD, Live: j.Live, Unrefunded: j.Unrefunded, Description: j.Description}
	return nil
}

// firedJSON is FiredFault with Delay as a Go duration string.
type firedJSON struct {
	Time    time.Time
	Method  string
	Route   string
	Path    string
	Kind    FaultKind
	Status  int
	Message string
	Delay   string
	Commit  bool
	Chaos   bool
}

// MarshalJSON encodes the fired fault with "Delay" as a Go duration string.
func (f FiredFault) MarshalJSON() ([]byte, error) {
	return json.Marshal(firedJSON{Time: f.Time, Method: f.Method, Route: f.Route, Path: f.Path, Kind: f.Kind,
		Status: f.Status, Message: f.Message, Delay: f.Delay.String(), Commit: f.Commit, Chaos: f.Chaos})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (f *FiredFault) UnmarshalJSON(b []byte) error {
	var j firedJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	d, err := parseJSONDuration("Delay", j.Delay)
	if err != nil {
		return err
	}
	*f = FiredFault{Time: j.Time, Method: j.Method, Route: j.Route, Path: j.Path, Kind: j.Kind,
		Status: j.Status, Message: j.Message, Delay: d, Commit: j.Commit, Chaos: j.Chaos}
	return nil
}

func parseJSONDuration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("sim: %s %q: want a Go duration string such as \"90s\"", field, s)
	}
	return d, nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
