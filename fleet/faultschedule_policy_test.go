package fleet_test

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// schedulePolicy is the Policy the fault schedules give every Manager
// generation: the defaults, or the fields named in GPUFLEET_SCHEDULE_POLICY
// as comma-separated Field=value pairs (durations as time.ParseDuration
// reads them, counts as integers, booleans as strconv.ParseBool), e.g.
//
//	GPUFLEET_SCHEDULE_POLICY=DriftCheckInterval=1m,VisibilityGrace=30s
//
// so that the same schedules can be tried under other timing rules.
func schedulePolicy() fleet.Policy {
	var p fleet.Policy
	spec := os.Getenv("GPUFLEET_SCHEDULE_POLICY")
	if spec == "" {
		return p
	}
	v := reflect.ValueOf(&p).Elem()
	for _, kv := range strings.Split(spec, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		f := v.FieldByName(name)
		if !ok || !f.IsValid() {
			panic(fmt.Sprintf("GPUFLEET_SCHEDULE_POLICY: no Policy field in %q", kv))
		}
		if err := setPolicyField(f, val); err != nil {
			panic(fmt.Sprintf("GPUFLEET_SCHEDULE_POLICY: %s: %v", name, err))
		}
	}
	return p
}

func setPolicyField(f reflect.Value, val string) error {
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(val)
		f.SetInt(int64(d))
		return err
	case f.Kind() == reflect.Int:
		n, err := strconv.Atoi(val)
		f.SetInt(int64(n))
		return err
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(val)
		f.SetBool(b)
		return err
	case f.Kind() == reflect.String:
		f.SetString(val)
		return nil
	}
	return fmt.Errorf("unsupported field kind %s", f.Kind())
}
