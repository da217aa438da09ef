package userapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/flotilla/flotilla/internal/hub/httpapi"
)

// writeStoreError answers 404 for a cluster name the store does not know, 500 otherwise.
func writeStoreError(w http.ResponseWriter, err error, name string) {
	httpapi.WriteStoreError(w, err, fmt.Sprintf("cluster %q", name))
}

// writeViewError answers 404 for an unknown release or cluster, 500 otherwise.
func writeViewError(w http.ResponseWriter, err error) {
	var unknown errUnknown
	if errors.As(err, &unknown) {
		httpapi.WriteError(w, http.StatusNotFound, err)
		return
	}
	httpapi.WriteError(w, http.StatusInternalServerError, err)
}
