package render

// WithHelmLimits returns a copy of h whose rendering is bounded by the given limits instead of
// the defaults (zero keeps a default), so that tests can reach each bound with small charts.
func WithHelmLimits(h Helm, chartBytes int64, chartFiles int, valuesBytes, outputBytes int64) *Helm {
	l := defaultHelmLimits
	if chartBytes > 0 {
		l.chartBytes = chartBytes
	}
	if chartFiles > 0 {
		l.chartFiles = chartFiles
	}
	if valuesBytes > 0 {
		l.valuesBytes = valuesBytes
	}
	if outputBytes > 0 {
		l.outputBytes = outputBytes
	}
	h.lim = &l
	return &h
}

// DefaultHelmLimits are the bounds the agent renders charts with.
var DefaultHelmLimits = struct {
	ChartBytes  int64
	ChartFiles  int
	ValuesBytes int64
	OutputBytes int64
}{defaultHelmLimits.chartBytes, defaultHelmLimits.chartFiles, defaultHelmLimits.valuesBytes, defaultHelmLimits.outputBytes}

// WithRenderStarted returns a copy of h that calls started as Helm starts rendering, in the
// goroutine that renders.
func WithRenderStarted(h Helm, started func()) *Helm {
	h.started = started
	return &h
}
