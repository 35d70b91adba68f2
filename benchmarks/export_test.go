package benchmarks

import "sync"

// BlockingIORun exposes workload 5 to the package's benchmarks.
var BlockingIORun = blockingIORun

// CPULightRun exposes workload 3 to the package's benchmarks, with a
// spinner calibrated once per process.
func CPULightRun(p Pool, n int) []float64 {
	spinOnce.Do(func() { spinCal = calibrate() })
	return cpuLightRun(p, spinCal, n)
}

var (
	spinOnce sync.Once
	spinCal  spinner
)

// PriorityRun exposes workload 6 to the package's benchmarks: p50, p99 and
// max submit-to-start latency of the urgent tasks, in ns, and the share of
// the backlog queued at the start.
func PriorityRun(p Pool, backlog, urgent int) []float64 {
	spinOnce.Do(func() { spinCal = calibrate() })
	return priorityRun(p, spinCal, backlog, urgent)
}

// FairnessRun exposes workload 9 to the package's benchmarks: p50, p99 and
// max arrival-to-start latency of the newcomers' tasks, in ns, and the
// share of the backlog queued at the start.
func FairnessRun(p Pool, backlog, newcomers int) ([]float64, error) {
	spinOnce.Do(func() { spinCal = calibrate() })
	return fairnessRun(p, spinCal, backlog, newcomers)
}
