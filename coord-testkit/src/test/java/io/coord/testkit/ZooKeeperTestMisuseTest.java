package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/** Mistakes in using the extension fail the test class with a message that says what to change. */
class ZooKeeperTestMisuseTest {
    @Test
    void aFinalFieldCannotReceiveTheEnsemble() {
        assertEquals(
                List.of("cannot inject the ensemble into final field FinalField.zk: make it non-final"),
                failures(FinalField.class));
    }

    @Test
    void anImpossibleServerCountIsNamedWithItsClass() {
        assertEquals(
                List.of("@ZooKeeperTest on " + NoServers.class.getName() + ": servers must be at least 1, was 0"),
                failures(NoServers.class));
    }

    @Test
    void theExtensionAloneAsksForTheAnnotation() {
        assertEquals(
                List.of("ZooKeeperExtension needs @ZooKeeperTest on the test class or an enclosing class"),
                failures(ExtensionOnly.class));
    }

    private static List<String> failures(Class<?> testClass) {
        return EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(testClass))
                .execute()
                .allEvents()
                .failed()
                .stream()
                .map(Event::getPayload)
                .flatMap(payload -> payload
                        .flatMap(p -> p instanceof org.junit.platform.engine.TestExecutionResult r
                                ? r.getThrowable()
                                : java.util.Optional.empty())
                        .stream())
                .map(Throwable::getMessage)
                .toList();
    }

    // Run only through the engine above: the nested classes carry no @Nested, so the outer run skips them.
    @ZooKeeperTest
    static class FinalField {
        final ZooKeeperEnsemble zk = null;

        @Test
        void unused() {}
    }

    @ZooKeeperTest(servers = 0)
    static class NoServers {
        @Test
        void unused() {}
    }

    @ExtendWith(ZooKeeperExtension.class)
    static class ExtensionOnly {
        @Test
        void unused() {}
    }
}
