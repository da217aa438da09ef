package fleetsim

import "testing"

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		samples []float64
		want    Latencies
	}{
		{"none", nil, Latencies{}},
		{"one", []float64{0.4}, Latencies{P50: 0.4, P99: 0.4, Max: 0.4, Samples: 1}},
		{"nearest rank of 4", []float64{4, 1, 3, 2}, Latencies{P50: 2, P99: 4, Max: 4, Samples: 4}},
	}
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[99-i] = float64(i + 1) // 100 .. 1, unsorted
	}
	tests = append(tests, struct {
		name    string
		samples []float64
		want    Latencies
	}{"nearest rank of 100", hundred, Latencies{P50: 50, P99: 99, Max: 100, Samples: 100}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := summarize(tt.samples); got != tt.want {
				t.Errorf("summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}
