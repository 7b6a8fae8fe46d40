package main

// The fallback roots make HTTPS work where the system has no CA
// certificates, as in the container image (FROM scratch): the dataset,
// the privacy lists and the geofeeds are all fetched over HTTPS. They are
// used only when the system offers no roots of its own; a system with a
// CA bundle (any distribution's ca-certificates) is trusted as before.
import _ "golang.org/x/crypto/x509roots/fallback"
