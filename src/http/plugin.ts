/**
 * `shared(name, plugin)`: a Fastify plugin whose hooks, decorators and handlers apply to the
 * instance it is registered on rather than to a child context. That is all fastify-plugin
 * does for the plugins of this folder; the `skip-override` property is Fastify's documented
 * way to get it without that package (docs/Reference/Plugins.md), which this project does not
 * list as a dependency.
 *
 * Example: `await app.register(authentication, { services })` inside the API's plugin puts
 * the authentication hook on every route that plugin adds afterwards.
 */
import type { FastifyPluginAsync } from 'fastify';

export function shared<O extends Record<string, unknown>>(name: string, plugin: FastifyPluginAsync<O>): FastifyPluginAsync<O> {
  return Object.assign(plugin, { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: name });
}
