package io.coord.bench.demo;

import io.coord.bench.Args;
import io.coord.bench.Ensemble;
import io.coord.bench.Progress;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** The {@code demo} command: each primitive once, the way the classic ZooKeeper write-ups tell it, with checks. */
public final class Demo {
    private Demo() {}

    /** Returns 0 when every scenario passed, else 1. */
    public static int run(Args args, Progress progress, PrintStream out) throws Exception {
        List<Verdict> verdicts = new ArrayList<>();
        try (Ensemble ensemble = Ensemble.start(args.connect(), Optional.empty(), progress)) {
            DemoContext ctx = new DemoContext(ensemble, out);
            for (DemoScenario scenario : DemoScenarios.all()) {
                out.println();
                out.println("== " + scenario.title() + " ==");
                progress.step("demo: " + scenario.title());
                Verdict verdict;
                try {
                    verdict = scenario.run(ctx);
                } catch (InterruptedException e) {
                    throw e;
                } catch (Exception e) {
                    verdict = Verdict.of(scenario.title(), false, "could not finish: " + e);
                }
                out.println(verdict.line());
                verdicts.add(verdict);
                ensemble.closeClients(); // every scenario starts from fresh sessions
            }
            ensemble.removeRunData(ctx.root(), progress);
        }
        long passed = verdicts.stream().filter(Verdict::pass).count();
        out.println();
        verdicts.forEach(v -> out.println(v.line()));
        out.println("demo: " + passed + "/" + verdicts.size() + " scenarios passed");
        return passed == verdicts.size() ? 0 : 1;
    }
}
