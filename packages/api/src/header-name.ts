// The HTTP header names a config may use (RFC 9110 tokens, with a leading ':' for pseudo-headers), in
// a module of its own so that code without the config schemas can check names the same way.
export const HEADER_NAME_SOURCE = "^:?[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$";
export const HEADER_NAME_REGEXP = new RegExp(HEADER_NAME_SOURCE);
