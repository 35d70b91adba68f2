module github.com/smartpool-go/smartpool

go 1.26

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/google/btree v1.1.3
	github.com/stretchr/testify v1.12.1
	go.uber.org/atomic v1.12.0
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
