package importer

import "io"

func ioLimit(r io.Reader, n int64) io.Reader { return io.LimitReader(r, n) }
