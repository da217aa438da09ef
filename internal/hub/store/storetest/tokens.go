package storetest

import (
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flotilla/flotilla/internal/hub/store"
)

// hash is the SecretHash of secret.
func hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func (o opener) testJoinTokens(t *testing.T) {
	// Each case creates token "tok" for cluster "edge-1", secret "s3cret", expiring at
	// at(time.Hour), then tries to consume it.
	for _, tc := range []struct {
		name    string
		usedAt  time.Time // of the created token
		secret  string
		cluster string
		now     time.Time
		wantErr error
	}{
		{name: "valid token is consumed", secret: "s3cret", cluster: "edge-1", now: at(time.Minute)},
		{name: "just before expiry is valid", secret: "s3cret", cluster: "edge-1", now: at(time.Hour - time.Microsecond)},
		{name: "at expiry is expired", secret: "s3cret", cluster: "edge-1", now: at(time.Hour), wantErr: store.ErrTokenInvalid},
		{name: "after expiry is expired", secret: "s3cret", cluster: "edge-1", now: at(2 * time.Hour), wantErr: store.ErrTokenInvalid},
		{name: "wrong secret", secret: "guess", cluster: "edge-1", now: at(time.Minute), wantErr: store.ErrTokenInvalid},
		{name: "empty secret", secret: "", cluster: "edge-1", now: at(time.Minute), wantErr: store.ErrTokenInvalid},
		{name: "wrong cluster", secret: "s3cret", cluster: "edge-2", now: at(time.Minute), wantErr: store.ErrTokenInvalid},
		{name: "already used", usedAt: at(time.Second), secret: "s3cret", cluster: "edge-1", now: at(time.Minute), wantErr: store.ErrTokenInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, s := t.Context(), o.new(t)
			addCluster(t, ctx, s, "edge-1")
			must(t, s.CreateJoinToken(ctx, store.JoinToken{
				ID: "tok", SecretHash: hash("s3cret"), Cluster: "edge-1", ExpiresAt: at(time.Hour), UsedAt: tc.usedAt,
			}))
			var secretHash []byte
			if tc.secret != "" {
				secretHash = hash(tc.secret)
			}
			err := s.ConsumeJoinToken(ctx, "tok", secretHash, tc.cluster, tc.now)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("ConsumeJoinToken: err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			err = s.ConsumeJoinToken(ctx, "tok", secretHash, tc.cluster, tc.now)
			if !errors.Is(err, store.ErrTokenInvalid) {
				t.Errorf("ConsumeJoinToken a second time: err = %v, want ErrTokenInvalid", err)
			}
		})
	}

	t.Run("unknown token", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		err := s.ConsumeJoinToken(ctx, "nope", hash("s3cret"), "edge-1", at(0))
		if !errors.Is(err, store.ErrTokenInvalid) {
			t.Errorf("err = %v, want ErrTokenInvalid", err)
		}
	})

	t.Run("a failed attempt does not use the token", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "tok", SecretHash: hash("s3cret"), Cluster: "edge-1", ExpiresAt: at(time.Hour)}))
		for _, attempt := range []struct {
			secret, cluster string
		}{{"guess", "edge-1"}, {"s3cret", "edge-2"}} {
			if err := s.ConsumeJoinToken(ctx, "tok", hash(attempt.secret), attempt.cluster, at(0)); !errors.Is(err, store.ErrTokenInvalid) {
				t.Fatalf("ConsumeJoinToken(%+v): err = %v, want ErrTokenInvalid", attempt, err)
			}
		}
		must(t, s.ConsumeJoinToken(ctx, "tok", hash("s3cret"), "edge-1", at(0)))
	})

	t.Run("refuses a taken ID", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "tok", SecretHash: hash("one"), Cluster: "edge-1", ExpiresAt: at(time.Hour)}))
		err := s.CreateJoinToken(ctx, store.JoinToken{ID: "tok", SecretHash: hash("two"), Cluster: "edge-2", ExpiresAt: at(time.Hour)})
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("CreateJoinToken twice: err = %v, want ErrExists", err)
		}
		// The first token is intact.
		must(t, s.ConsumeJoinToken(ctx, "tok", hash("one"), "edge-1", at(0)))
	})

	t.Run("tokens are independent", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		for _, id := range []string{"a", "b"} {
			must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: id, SecretHash: hash(id), Cluster: "edge-1", ExpiresAt: at(time.Hour)}))
		}
		must(t, s.ConsumeJoinToken(ctx, "a", hash("a"), "edge-1", at(0)))
		must(t, s.ConsumeJoinToken(ctx, "b", hash("b"), "edge-1", at(0)))
	})

	t.Run("concurrent consumers succeed exactly once", func(t *testing.T) {
		t.Parallel()
		ctx, s := t.Context(), o.new(t)
		addCluster(t, ctx, s, "edge-1")
		must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "tok", SecretHash: hash("s3cret"), Cluster: "edge-1", ExpiresAt: at(time.Hour)}))
		const n = 20
		errs := make([]error, n)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
		)
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.ConsumeJoinToken(ctx, "tok", hash("s3cret"), "edge-1", at(time.Minute))
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, store.ErrTokenInvalid):
				t.Errorf("consumer %d: err = %v, want nil or ErrTokenInvalid", i, err)
			}
		}
		if ok != 1 {
			t.Errorf("%d of %d concurrent consumers succeeded, want exactly 1", ok, n)
		}
	})
}

func (o opener) testCertificates(t *testing.T) {
	ctx, s := t.Context(), o.new(t)
	addCluster(t, ctx, s, "edge-1")
	addCluster(t, ctx, s, "edge-2")
	must(t, s.AddCertificate(ctx, store.Certificate{Serial: "0a1b", Cluster: "edge-1", NotAfter: at(24 * time.Hour)}))
	must(t, s.AddCertificate(ctx, store.Certificate{Serial: "0a1c", Cluster: "edge-1", NotAfter: at(24 * time.Hour), Revoked: true}))
	must(t, s.AddCertificate(ctx, store.Certificate{Serial: "ff00", Cluster: "edge-2", NotAfter: at(24 * time.Hour)}))

	for _, tc := range []struct {
		name, serial, cluster string
		want                  bool
	}{
		{"issued to the cluster", "0a1b", "edge-1", true},
		{"another cluster's", "ff00", "edge-1", false},
		{"issued to another cluster", "0a1b", "edge-2", false},
		{"revoked", "0a1c", "edge-1", false},
		{"unknown serial", "dead", "edge-1", false},
		{"unknown cluster", "0a1b", "nope", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.CertificateValid(ctx, tc.serial, tc.cluster)
			must(t, err)
			if got != tc.want {
				t.Errorf("CertificateValid(%q, %q) = %v, want %v", tc.serial, tc.cluster, got, tc.want)
			}
		})
	}

	t.Run("refuses a recorded serial", func(t *testing.T) {
		err := s.AddCertificate(ctx, store.Certificate{Serial: "0a1c", Cluster: "edge-1", NotAfter: at(48 * time.Hour)})
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("AddCertificate twice: err = %v, want ErrExists", err)
		}
		// The revoked certificate stays revoked.
		valid, err := s.CertificateValid(ctx, "0a1c", "edge-1")
		must(t, err)
		if valid {
			t.Error("a refused AddCertificate un-revoked the recorded certificate")
		}
	})
}

func (o opener) testRevocation(t *testing.T) {
	ctx, s := t.Context(), o.new(t)
	addCluster(t, ctx, s, "edge-1")
	addCluster(t, ctx, s, "edge-2")
	for _, c := range []store.Certificate{
		{Serial: "01", Cluster: "edge-1", NotAfter: at(24 * time.Hour)},
		{Serial: "02", Cluster: "edge-1", NotAfter: at(24 * time.Hour)},
		{Serial: "03", Cluster: "edge-1", NotAfter: at(24 * time.Hour)},
		{Serial: "09", Cluster: "edge-2", NotAfter: at(24 * time.Hour)},
	} {
		must(t, s.AddCertificate(ctx, c))
	}
	valid := func(serial, cluster string) bool {
		ok, err := s.CertificateValid(ctx, serial, cluster)
		must(t, err)
		return ok
	}
	revoke := func(cluster, serial string, want int64) {
		t.Helper()
		n, err := s.RevokeCertificates(ctx, cluster, serial)
		must(t, err)
		if n != want {
			t.Errorf("RevokeCertificates(%q, %q) = %d, want %d", cluster, serial, n, want)
		}
	}
	revoke("edge-1", "01", 1)
	revoke("edge-1", "01", 0) // already revoked
	revoke("edge-2", "02", 0) // another cluster's serial
	if valid("01", "edge-1") || !valid("02", "edge-1") {
		t.Error("revoking one serial: want 01 revoked and 02 valid")
	}
	revoke("edge-1", "", 2)
	if valid("02", "edge-1") || valid("03", "edge-1") || !valid("09", "edge-2") {
		t.Error("revoking every certificate of edge-1 must leave edge-2's")
	}

	must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "used", SecretHash: hash("u"), Cluster: "edge-1", ExpiresAt: at(time.Hour)}))
	must(t, s.ConsumeJoinToken(ctx, "used", hash("u"), "edge-1", at(time.Minute)))
	for _, id := range []string{"a", "b"} {
		must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: id, SecretHash: hash(id), Cluster: "edge-1", ExpiresAt: at(time.Hour)}))
	}
	must(t, s.CreateJoinToken(ctx, store.JoinToken{ID: "other", SecretHash: hash("o"), Cluster: "edge-2", ExpiresAt: at(time.Hour)}))
	n, err := s.RevokeJoinTokens(ctx, "edge-1", at(2*time.Minute))
	must(t, err)
	if n != 2 {
		t.Errorf("RevokeJoinTokens = %d, want the 2 unused tokens", n)
	}
	if err := s.ConsumeJoinToken(ctx, "a", hash("a"), "edge-1", at(3*time.Minute)); !errors.Is(err, store.ErrTokenInvalid) {
		t.Errorf("a revoked token: err = %v, want ErrTokenInvalid", err)
	}
	must(t, s.ConsumeJoinToken(ctx, "other", hash("o"), "edge-2", at(3*time.Minute)))
}
