import { routeDocs } from '../openapi/registry.js';

export const metricsDocs = routeDocs({
  'GET /metrics': {
    summary: 'Prometheus metrics',
    description: 'Off (no FOOTFALL_METRICS_TOKEN): a plain 404, as any unknown path. docs/operations.md lists the series.',
    security: ['metricsBearer'],
    responses: {
      200: { description: "Prometheus' text exposition format", media: 'text/plain' },
      401: { description: 'No or wrong scrape token', headers: { 'WWW-Authenticate': 'Bearer realm="footfall metrics"' } },
      404: 'Metrics are off',
    },
  },
});
