package benchcmd

import (
	"bytes"
	"strings"
	"testing"
)

func TestBenchCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  []string
	}{
		{name: "fleet help has examples and says spokes are simulated", args: []string{"fleet", "--help"},
			wantOut: []string{"flotilla-bench fleet --clusters 480 --releases 65 --objects 100", "The spokes are simulated", "--push", "--report-interval"}},
		{name: "idle help has examples", args: []string{"idle", "--help"},
			wantOut: []string{"flotilla-bench idle --agents 10000 --window 1m --restart", "--agents-per-process"}},
		{name: "cold help has examples", args: []string{"cold", "--help"},
			wantOut: []string{"flotilla-bench cold --agents 10000", "--replicas 2", "--postgres", "gave up"}},
		{name: "cold replicas without a database is a usage error", args: []string{"cold", "--replicas", "2"},
			wantCode: 2, wantErr: []string{"--replicas 2: replicas share a PostgreSQL database: give --postgres"}},
		{name: "cold without replicas is a usage error", args: []string{"cold", "--replicas", "0"},
			wantCode: 2, wantErr: []string{"--replicas 0: want 1 or more"}},
		{name: "cold refuses a database URL that is not postgres://", args: []string{"cold", "--postgres", "mysql://root:secret@db/x"},
			wantCode: 1, wantErr: []string{`PostgreSQL server "mysql://root:xxxxx@db/x": want postgres://`}},
		{name: "fleet help shows the per-cluster layout", args: []string{"fleet", "--help"},
			wantOut: []string{"flotilla-bench fleet --clusters 100 --layout per-cluster", "clusters/{{ .Cluster.Name }}/<release>"}},
		{name: "bad layout is a usage error", args: []string{"fleet", "--layout", "flat"},
			wantCode: 2, wantErr: []string{`want shared or per-cluster, got "flat"`}},
		{name: "helm with the per-cluster layout is a usage error", args: []string{"fleet", "--helm", "--layout", "per-cluster"},
			wantCode: 2, wantErr: []string{"--helm renders charts: leave out --layout per-cluster"}},
		{name: "bad payload is a usage error", args: []string{"fleet", "--payload", "zeros"},
			wantCode: 2, wantErr: []string{`want text or random, got "zeros"`}},
		{name: "bad output is a usage error", args: []string{"idle", "-o", "yaml"},
			wantCode: 2, wantErr: []string{`want table or json, got "yaml"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			if code := Run(t.Context(), tt.args, &out, &errOut); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, tt.wantCode, errOut.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout does not contain %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, errOut.String())
				}
			}
		})
	}
}
