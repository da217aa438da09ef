package v1alpha1

import (
	"fmt"
	"time"
)

// MarshalText writes d in Go duration syntax ("1m0s", "1h30m0s"). encoding/json, sigs.k8s.io/yaml
// and go.yaml.in/yaml/v3 all use it, so a Duration is a string in every encoding.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(d.Duration.String()), nil
}

// UnmarshalText accepts Go duration syntax: "90s", "1m", "1h30m". A bare number is refused
// rather than taken as nanoseconds or seconds: "interval: 60" is ambiguous to a reader.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("duration %q: want Go duration syntax such as \"90s\", \"1m\" or \"1h30m\": %w", text, err)
	}
	d.Duration = v
	return nil
}
