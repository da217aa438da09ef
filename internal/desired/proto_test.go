package desired

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/flotilla/flotilla/internal/project"
	"github.com/flotilla/flotilla/internal/window"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// hubOnly are the Go fields deliberately not sent to agents, with why: the round trip leaves
// them zero. Anything else on one side only fails the tests below.
var hubOnly = map[string]string{
	"Assignment.SourceDigest": "the rollout's comparison across per-path artifacts, on the hub",
}

// These tests are what keeps the two forms one model: a field added to the Go types or to the
// proto messages and not to the other (or not to the conversion) makes one of them fail,
// naming the field. Both sides are filled by reflection, so a new field is filled without
// anyone writing a test for it.

func TestGoProtoGo(t *testing.T) {
	t.Parallel()
	want := filled[State]()
	m, err := ToProto(want.Cluster, want.Generation, want.Document)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	clearHubOnly(reflect.ValueOf(&want).Elem())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Go -> proto -> Go lost or changed fields (-want +got):\n%s", diff)
	}
}

func TestProtoGoProto(t *testing.T) {
	t.Parallel()
	want := filledProto()
	s, err := FromProto(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToProto(s.Cluster, s.Generation, s.Document)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" || !proto.Equal(want, got) {
		t.Errorf("proto -> Go -> proto lost or changed fields (-want +got):\n%s", diff)
	}
}

// Every proto field has a Go counterpart the conversion fills.
func TestToProtoSetsEveryField(t *testing.T) {
	t.Parallel()
	doc := filled[State]()
	m, err := ToProto(doc.Cluster, doc.Generation, doc.Document)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range unsetProto(m.ProtoReflect(), "DesiredState") {
		t.Errorf("%s is not set by ToProto of a document with every field set: a proto field with no Go counterpart, or one the conversion drops", path)
	}
}

// Every Go field has a proto counterpart the conversion reads.
func TestFromProtoSetsEveryField(t *testing.T) {
	t.Parallel()
	s, err := FromProto(filledProto())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range unsetGo(reflect.ValueOf(s), "State") {
		t.Errorf("%s is not set by FromProto of a message with every field set: a Go field with no proto counterpart, or one the conversion drops (a field kept from agents belongs in hubOnly)", path)
	}
}

func TestFromProtoRefusesBadHelmValues(t *testing.T) {
	t.Parallel()
	m := &agentv1.DesiredState{Cluster: "eu-1", Generation: 4, Assignments: []*agentv1.Assignment{
		{Release: "web", Helm: &agentv1.HelmRelease{ValuesJson: []byte(`{"replicas":`)}},
	}}
	_, err := FromProto(m)
	const want = `desired state generation 4 of cluster "eu-1": release "web": helm values: unexpected EOF`
	if err == nil || err.Error() != want {
		t.Errorf("FromProto of truncated Helm values: got error %v, want %q", err, want)
	}
}

// Helm values keep their numbers exactly: an agent must render what the hub scheduled, and a
// float64 would round 2^53+1.
func TestHelmValuesNumbersSurvive(t *testing.T) {
	t.Parallel()
	const values = `{"big":9007199254740993,"ratio":0.1}`
	m := &agentv1.DesiredState{Assignments: []*agentv1.Assignment{{Release: "web", Helm: &agentv1.HelmRelease{ValuesJson: []byte(values)}}}}
	s, err := FromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ToProto(s.Cluster, s.Generation, s.Document)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(back.GetAssignments()[0].GetHelm().GetValuesJson()); got != values {
		t.Errorf("values after a round trip: got %s, want %s", got, values)
	}
}

// filledProto is a DesiredState with every field of every message set, each scalar to a value
// of its own, every list and map two entries.
func filledProto() *agentv1.DesiredState {
	m := &agentv1.DesiredState{}
	n := 0
	fillProto(m.ProtoReflect(), &n)
	return m
}

func fillProto(m protoreflect.Message, n *int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range 2 {
				mp.Set(scalar(fd.MapKey(), n).MapKey(), scalar(fd.MapValue(), n))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range 2 {
				if fd.Message() != nil {
					e := l.NewElement()
					fillProto(e.Message(), n)
					l.Append(e)
				} else {
					l.Append(scalar(fd, n))
				}
			}
		case fd.Message() != nil:
			fillProto(m.Mutable(fd).Message(), n)
		default:
			m.Set(fd, scalar(fd, n))
		}
	}
}

func scalar(fd protoreflect.FieldDescriptor, n *int) protoreflect.Value {
	*n++
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("p%d", *n))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(*n))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(*n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(*n))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(*n))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(*n))
	case protoreflect.BytesKind:
		// The only bytes field is JSON (Helm values), which the conversion parses.
		return protoreflect.ValueOfBytes(fmt.Appendf(nil, `{"p%d":"v"}`, *n))
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(fd.Enum().Values().Get(fd.Enum().Values().Len() - 1).Number())
	}
	panic(fmt.Sprintf("no value for %s (%s)", fd.FullName(), fd.Kind()))
}

// unsetProto returns the paths of the fields of m, and of every message in it, that are not set.
func unsetProto(m protoreflect.Message, path string) []string {
	var out []string
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		p := path + "." + string(fd.Name())
		if !m.Has(fd) {
			out = append(out, p)
			continue
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				m.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
					out = append(out, unsetProto(v.Message(), fmt.Sprintf("%s[%v]", p, k))...)
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				l := m.Get(fd).List()
				for j := range l.Len() {
					out = append(out, unsetProto(l.Get(j).Message(), fmt.Sprintf("%s[%d]", p, j))...)
				}
			}
		case fd.Message() != nil:
			out = append(out, unsetProto(m.Get(fd).Message(), p)...)
		}
	}
	return out
}

// unsetGo returns the paths of the exported fields of v, and of every struct in it, that are
// zero, leaving out hubOnly.
func unsetGo(v reflect.Value, path string) []string {
	var out []string
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			out = unsetGo(v.Elem(), path)
		}
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, unsetGo(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			out = append(out, unsetGo(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))...)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() || hubOnly[v.Type().Name()+"."+sf.Name] != "" {
				continue
			}
			p := path + "." + sf.Name
			if sf.Anonymous {
				p = path
			}
			if f := v.Field(i); f.IsZero() || (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f.Len() == 0 {
				out = append(out, p)
			} else {
				out = append(out, unsetGo(f, p)...)
			}
		}
	}
	return out
}

// clearHubOnly zeroes the hubOnly fields in v, as the agent receives them.
func clearHubOnly(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			clearHubOnly(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			clearHubOnly(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				if hubOnly[v.Type().Name()+"."+sf.Name] != "" {
					v.Field(i).SetZero()
				} else {
					clearHubOnly(v.Field(i))
				}
			}
		}
	}
}

// A project without a ServiceAccount (the platform's) reaches the agent without one: the agent
// then applies with its own identity, not as an empty name.
func TestProjectWithoutServiceAccount(t *testing.T) {
	t.Parallel()
	doc := Document{Assignments: []Assignment{{Release: "web", Vars: map[string]string{}, Project: &project.Rules{Name: "platform"}}}}
	m, err := ToProto("eu-1", 1, doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := FromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(doc, s.Document); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// A gate's duration the agent cannot take stays one that window.Check refuses, whatever the
// number on the wire: the gate then holds back everything it may cover (fail closed).
func TestFromProtoKeepsBadGateDurationsBad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		seconds int64
		want    string
	}{
		{seconds: 3600, want: ""},
		{seconds: 0, want: `window "w": duration 0s must be more than 0 and at most 8784h0m0s`},
		{seconds: -1, want: `window "w": duration -1s must be more than 0 and at most 8784h0m0s`},
		// Would wrap round to a valid-looking duration if converted blindly.
		{seconds: math.MaxInt64/int64(time.Second) + 3600, want: `window "w": duration 8784h0m1s must be more than 0 and at most 8784h0m0s`},
		{seconds: 1 << 62, want: `window "w": duration 8784h0m1s must be more than 0 and at most 8784h0m0s`},
	} {
		s, err := FromProto(&agentv1.DesiredState{Gates: []*agentv1.Gate{{Name: "w", Kind: "window", Type: "deny", Schedule: "0 1 * * *", DurationSeconds: tc.seconds}}})
		if err != nil {
			t.Fatal(err)
		}
		err = window.Check(s.Gates[0])
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("%d seconds: Check says %v, want %q", tc.seconds, err, tc.want)
		}
	}
}

// What an agent keeps of a document from a hub older than tombstones still says so when read
// back: it must not make that hub's next document look like one that removes on purpose.
func TestStateToProtoKeepsExplicitRemovals(t *testing.T) {
	t.Parallel()
	for _, explicit := range []bool{false, true} {
		want := State{Cluster: "eu-1", Generation: 3, ExplicitRemovals: explicit,
			Document: Document{Assignments: []Assignment{{Release: "web", Vars: map[string]string{}}}}}
		m, err := StateToProto(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromProto(m)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("explicit removals %t: round trip (-want +got):\n%s", explicit, diff)
		}
	}
}

// One assignment converts as it does inside a document, both ways, and bad Helm values are
// refused naming the release.
func TestAssignmentProto(t *testing.T) {
	t.Parallel()
	want := filled[Assignment]()
	m, err := AssignmentToProto(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AssignmentFromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	clearHubOnly(reflect.ValueOf(&want).Elem())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Go -> proto -> Go of one assignment (-want +got):\n%s", diff)
	}
	_, err = AssignmentFromProto(&agentv1.Assignment{Release: "web", Helm: &agentv1.HelmRelease{ValuesJson: []byte("not json")}})
	const wantErr = `release "web": helm values: invalid character 'o' in literal null (expecting 'u')`
	if err == nil || err.Error() != wantErr {
		t.Errorf("bad Helm values: got error %v, want %q", err, wantErr)
	}
}

// An assignment without project rules is the built-in platform project (everything allowed,
// the agent's own identity): it must not turn into rules of an unnamed project on the way.
func TestNoProjectStaysNone(t *testing.T) {
	t.Parallel()
	m, err := AssignmentToProto(Assignment{Release: "web", Vars: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if m.GetProject() != nil {
		t.Errorf("wire form of an assignment without rules carries project %v", m.GetProject())
	}
	got, err := AssignmentFromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Project != nil {
		t.Errorf("assignment read back has project rules %+v, want none", got.Project)
	}
}
