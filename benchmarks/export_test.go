package benchmarks

// BlockingIORun exposes workload 5 to the package's benchmarks.
var BlockingIORun = blockingIORun
