// AWS names the config checks and the proxy's data plane both test (no schemas here, so a worker
// thread can import it).

/** STS's RoleSessionName (backendAuth aws.assumeRole): 2 to 64 of letters, digits and +=,.@_- */
export const AWS_SESSION_NAME = /^[\w+=,.@-]{2,64}$/;
