package secrets

// WrapDataKeyForTest wraps a data key for an age recipient as Encrypt does.
var WrapDataKeyForTest = wrapDataKey
