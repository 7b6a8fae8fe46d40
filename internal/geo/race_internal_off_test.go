//go:build !race

package geo

const raceBuild = false
