module github.com/hustings/hustings

go 1.26

require (
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
