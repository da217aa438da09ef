package schedule

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/desired"
)

// The scheduler's output survives the stored form.
func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	p := Schedule(fleet(
		withVars(withPath(release("baseline"), "clusters/{{ .Cluster.Labels.region }}"), map[string]string{"x": "1"}),
		release("apps", target("env", "production")),
	), []Cluster{cluster("eu-1", "region", "eu", "env", "production")}, artifacts, nil, "r1")
	want := p.Assignments["eu-1"]
	b, err := desired.Encode(desired.Document{Assignments: want})
	if err != nil {
		t.Fatal(err)
	}
	got, err := desired.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}

}
