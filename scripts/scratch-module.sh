#!/usr/bin/env bash
# Checks the README's "Sub-modules from a checkout" instructions: a scratch
# module outside the repository uses the core, prometheus/, jetstream/ and otel/
# through replace directives, then through a go.work, builds and runs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

main() {
	cat >"$1/main.go" <<'GO'
package main

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/jetstream"
	spotel "github.com/smartpool-go/smartpool/otel"
	smartprom "github.com/smartpool-go/smartpool/prometheus"
)

var _ = jetstream.Options{Propagator: spotel.JetStreamPropagator(nil)}

func main() {
	jobs := channels.NewFIFO()
	owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}}.
		With(smartpool.Config[string]{Observe: spotel.Observe[string]()}))
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(smartprom.NewCollector("jobs", owned.Pool()))
	_ = jobs.Submit(func(context.Context) {})
	report, _ := owned.Close(context.Background())
	families, err := reg.Gather()
	if err != nil || report.Total().Ran != 1 || len(families) == 0 {
		panic(fmt.Sprint("ran ", report.Total().Ran, ", ", len(families), " metric families, ", err))
	}
	fmt.Println("ok")
}
GO
}

echo "-- replace directives"
mkdir "$scratch/replace" && cd "$scratch/replace"
go mod init example.com/app >/dev/null 2>&1
main .
go mod edit \
	-replace "github.com/smartpool-go/smartpool=$repo" \
	-replace "github.com/smartpool-go/smartpool/prometheus=$repo/prometheus" \
	-replace "github.com/smartpool-go/smartpool/jetstream=$repo/jetstream" \
	-replace "github.com/smartpool-go/smartpool/otel=$repo/otel"
go mod tidy
go run . 2>/dev/null

echo "-- go.work"
mkdir "$scratch/work" && cd "$scratch/work"
go mod init example.com/app >/dev/null 2>&1
main .
go work init . "$repo" "$repo/prometheus" "$repo/jetstream" "$repo/otel"
go get github.com/prometheus/client_golang
go run . 2>/dev/null
