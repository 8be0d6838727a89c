// @gw/api: the definitions shared by the proxy, the controller and gwctl.
export * from './config/schema.ts';
export * from './config/source.ts';
export * from './duration.ts';
