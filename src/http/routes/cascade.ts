/** Tests (and tools) wait for the deletion cascade through this: see src/cascade.ts. */
import type { Services } from '../../services.js';

export const settleCascades = (services: Services): Promise<void> => services.cascade.settle();
