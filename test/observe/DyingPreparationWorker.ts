/** A preparation worker that dies on its first job (PreparationWorkers.test.ts). */
import { serve } from "../../services/platform/WorkerEntry.ts"

serve(() => process.exit(1))
