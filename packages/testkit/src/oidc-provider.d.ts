// oidc-provider ships no type declarations (DefinitelyTyped's @types/oidc-provider lags behind the
// package); this covers only what identity-provider.ts uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export type Configuration = Record<string, unknown>;

  export class Provider {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    /** The provider is a Koa application: a request listener for node:http. */
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    on(event: string, listener: (...args: unknown[]) => void): this;
    /** A custom grant type at the token endpoint, with the parameters it takes. */
    registerGrantType(
      name: string,
      handler: (ctx: never) => Promise<void>,
      params?: string[],
      allowedDuplicateParameters?: string[],
    ): void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    readonly Grant: {
      new (init: { accountId?: string | undefined; clientId: string }): Grant;
      find(id: string): Promise<Grant | undefined>;
    };
  }

  export interface InteractionDetails {
    uid: string;
    grantId?: string;
    params: Record<string, unknown>;
    session?: { accountId?: string };
    prompt: {
      name: string;
      details: {
        missingOIDCScope?: string[];
        missingOIDCClaims?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
    };
  }

  export interface Grant {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    addResourceScope(indicator: string, scope: string): void;
    save(): Promise<string>;
  }

  export const errors: {
    InvalidTarget: new (description?: string) => Error;
  };

  export default Provider;
}
