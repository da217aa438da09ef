//go:build !unix

package artifact

// noFollow is not available here; callers check the file type after opening.
const noFollow = 0
