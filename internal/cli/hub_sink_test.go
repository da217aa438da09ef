package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flotilla/flotilla/internal/audit"
)

func TestParseSinkHeaders(t *testing.T) {
	t.Parallel()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("Bearer from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		url     string
		values  []string
		want    http.Header
		wantErr string
	}{
		{name: "none", url: "https://x"},
		{name: "plain and repeated", url: "https://x", values: []string{"Authorization: Bearer t", "X-Scope-OrgID: fleet", "X-Tag: a", "X-Tag:b"},
			want: http.Header{"Authorization": {"Bearer t"}, "X-Scope-Orgid": {"fleet"}, "X-Tag": {"a", "b"}}},
		{name: "value from a file", url: "https://x", values: []string{"Authorization: @" + token}, want: http.Header{"Authorization": {"Bearer from-file"}}},
		{name: "missing file", url: "https://x", values: []string{"Authorization: @/nonexistent"}, wantErr: "--audit-sink-header Authorization: open /nonexistent: no such file or directory"},
		{name: "no colon", url: "https://x", values: []string{"Authorization Bearer"}, wantErr: `--audit-sink-header "Authorization Bearer": want 'Name: value'`},
		{name: "without a sink", values: []string{"A: b"}, wantErr: "--audit-sink-header needs --audit-sink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := audit.SinkOptions{URL: tt.url}
			err := parseSinkHeaders(&o, tt.values)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, o.Header); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}
