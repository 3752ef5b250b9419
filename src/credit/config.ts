import type { z } from 'zod';
import type { creditSection } from '../config/sections/credit.ts';

/** The credit section of the config (config/sections/credit.ts), as the credit stages read it. */
export type CreditConfig = z.infer<typeof creditSection>;
