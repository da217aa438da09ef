// Package bench holds Flotilla's benchmarks that need real parts (API servers, the flotilla
// binary) and compare it with a baseline measured in the same run. Run them with
//
//	make bench
//
// or one at a time, e.g. go test -run '^$' -bench Apply -benchtime 1x ./bench
package bench
