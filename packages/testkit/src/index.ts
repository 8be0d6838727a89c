// @gw/testkit: real servers and helpers for tests (private).
export * from './upstream.ts';
