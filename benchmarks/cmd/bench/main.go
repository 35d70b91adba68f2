// Command bench runs the benchmark suite: smartpool against the Go pools
// users pick today. It prints the tables, writes BENCHMARKS.md at the
// repository root and draws the headline chart.
//
// From benchmarks/:
//
//	go run ./cmd/bench                 # full run, a few minutes on 2 cores
//	go run ./cmd/bench -scale 0.01 -runs 1 -out '' -chart '' -readme ''   # CI smoke run, seconds
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/smartpool-go/smartpool/benchmarks"
)

func main() {
	var cfg benchmarks.Config
	flag.Float64Var(&cfg.Scale, "scale", 1, "multiply every task count (CI: 0.01)")
	flag.IntVar(&cfg.Rounds, "runs", 5, "measured runs per figure, after one warm-up")
	flag.IntVar(&cfg.Workers, "workers", 0, "pool size (0: GOMAXPROCS)")
	out := flag.String("out", "../BENCHMARKS.md", "Markdown report to write (empty: none)")
	chart := flag.String("chart", "../docs/bench.svg", "chart to draw, .svg or .png (empty: none)")
	readme := flag.String("readme", "../README.md", "document whose <!-- headline --> section gets the headline table (empty: none)")
	flag.Parse()
	log.SetFlags(0)
	cfg.Log = os.Stderr

	r := benchmarks.Run(cfg)
	if err := benchmarks.WriteMarkdown(os.Stdout, r, ""); err != nil {
		log.Fatal(err)
	}
	link := ""
	if *chart != "" {
		if err := writeChart(*chart, r.Headline); err != nil {
			log.Fatal(err)
		}
		link = *chart
		if *out != "" {
			if rel, err := filepath.Rel(filepath.Dir(*out), *chart); err == nil {
				link = filepath.ToSlash(rel)
			}
		}
	}
	if *out != "" {
		kept := handWritten(*out)
		if err := writeFile(*out, func(f *os.File) error {
			if err := benchmarks.WriteMarkdown(f, r, link); err != nil {
				return err
			}
			_, err := f.WriteString(kept)
			return err
		}); err != nil {
			log.Fatal(err)
		}
	}
	if *readme != "" {
		if err := spliceReadme(*readme, r); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "total %s; wrote %s %s %s\n", r.Elapsed.Round(1e8), *out, *chart, *readme)
}

func writeChart(path string, h benchmarks.Headline) error {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	if format != "svg" && format != "png" {
		return fmt.Errorf("chart %s: want .svg or .png", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeFile(path, func(f *os.File) error { return benchmarks.WriteChart(f, h, format) })
}

func spliceReadme(path string, r *benchmarks.Results) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := benchmarks.SpliceHeadline(string(doc), r)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// keptMarker starts the part of BENCHMARKS.md measured by other means
// (go test -bench in the repository root), which a run keeps as it was.
const keptMarker = "\n<!-- Measured with go test -bench, not by cmd/bench: kept as is. -->\n"

// handWritten returns the kept part of the document at path, marker
// included, or "" if there is none.
func handWritten(path string) string {
	doc, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(doc), keptMarker); i >= 0 {
		return string(doc[i:])
	}
	return ""
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
