package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// chart draws executors Running against seconds for each contender.
func chart(results []result, path string) error {
	p := plot.New()
	p.Title.Text = "Executors Running over time"
	p.X.Label.Text = "seconds since the request"
	p.Y.Label.Text = "executors Running"
	var lines []any
	for _, r := range results {
		pts := make(plotter.XYs, len(r.series))
		for i, s := range r.series {
			pts[i].X, pts[i].Y = s.s, s.running
		}
		lines = append(lines, r.name, pts)
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	p.Legend.Top = false
	p.Legend.Left = false
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
}

func drain(resp *http.Response) (int64, error) { return io.Copy(io.Discard, resp.Body) }
