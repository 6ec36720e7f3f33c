/** Tests (and tools) wait for the deletion cascade through this: see src/jobs/cascade.ts. */
import type { Services } from '../../composition/services.js';

export const settleCascades = (services: Services): Promise<void> => services.cascade.settle();
