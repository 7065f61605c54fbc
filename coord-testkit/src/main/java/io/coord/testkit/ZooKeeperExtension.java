package io.coord.testkit;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionConfigurationException;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestInstanceFactoryContext;
import org.junit.jupiter.api.extension.TestInstancePostProcessor;
import org.junit.jupiter.api.extension.TestInstancePreConstructCallback;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The extension behind {@link ZooKeeperTest}. The ensemble lives in the store of the annotated class's context, so
 * JUnit closes it when that class is done; nested classes share their enclosing class's ensemble, unless annotated
 * themselves: then they have their own, as their annotation says.
 */
public final class ZooKeeperExtension
        implements BeforeAllCallback,
                TestInstancePreConstructCallback,
                TestInstancePostProcessor,
                ParameterResolver,
                AfterEachCallback {
    private static final ExtensionContext.Namespace NAMESPACE =
            ExtensionContext.Namespace.create(ZooKeeperExtension.class);
    private static final String ENSEMBLE = "ensemble";

    /**
     * The ensemble as the store keeps it. JUnit closes a stored {@code AutoCloseable} from 5.13 on, and only a
     * {@code CloseableResource} before: this is both, so that a build on an older JUnit does not leave the servers
     * running for the rest of the JVM.
     */
    @SuppressWarnings("deprecation") // CloseableResource, for JUnit before 5.13
    private static final class Held implements ExtensionContext.Store.CloseableResource, AutoCloseable {
        final ZooKeeperEnsemble ensemble;
        private final AtomicBoolean closed = new AtomicBoolean();

        Held(ZooKeeperEnsemble ensemble) {
            this.ensemble = ensemble;
        }

        @Override
        public void close() throws IOException {
            if (closed.compareAndSet(false, true)) {
                ensemble.close();
            }
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        ZooKeeperEnsemble ensemble = ensemble(context);
        injectFields(context.getRequiredTestClass(), null, ensemble);
    }

    /**
     * Static fields are set before the instance is built, too: under {@code @TestInstance(PER_CLASS)} JUnit builds it
     * before any beforeAll, and its field initializers, or an extension that post-processes it (Spring's), may read
     * them.
     */
    @Override
    public void preConstructTestInstance(TestInstanceFactoryContext factoryContext, ExtensionContext context)
            throws Exception {
        injectFields(factoryContext.getTestClass(), null, ensemble(context));
    }

    @Override
    public void postProcessTestInstance(Object testInstance, ExtensionContext context) throws Exception {
        injectFields(testInstance.getClass(), testInstance, ensemble(context));
    }

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == ZooKeeperEnsemble.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        return ensemble(extensionContext);
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        ensemble(context).reset();
    }

    private static ZooKeeperEnsemble ensemble(ExtensionContext context) {
        ExtensionContext owner = annotatedClassContext(context);
        // Keyed by the annotated class: a store lookup falls back to the enclosing classes' stores, which must not
        // hand an annotated nested class its enclosing class's ensemble. Closed when the owner's context ends: after
        // the annotated class's last test.
        String key = ENSEMBLE + ":" + owner.getRequiredTestClass().getName();
        return owner.getStore(NAMESPACE).getOrComputeIfAbsent(key, k -> new Held(start(owner)), Held.class).ensemble;
    }

    private static ExtensionContext annotatedClassContext(ExtensionContext context) {
        for (ExtensionContext c = context; c != null; c = c.getParent().orElse(null)) {
            if (c.getTestClass().isPresent()
                    && c.getTestMethod().isEmpty()
                    && AnnotationSupport.isAnnotated(c.getTestClass().get(), ZooKeeperTest.class)) {
                return c;
            }
        }
        throw new ExtensionConfigurationException(
                "ZooKeeperExtension needs @ZooKeeperTest on the test class or an enclosing class");
    }

    private static ZooKeeperEnsemble start(ExtensionContext owner) {
        ZooKeeperTest settings = AnnotationSupport.findAnnotation(owner.getRequiredTestClass(), ZooKeeperTest.class)
                .orElseThrow();
        try {
            return ZooKeeperEnsemble.builder()
                    .servers(settings.servers())
                    .sessionTimeout(Duration.ofMillis(settings.sessionTimeoutMillis()))
                    .start();
        } catch (IllegalArgumentException e) {
            throw new ExtensionConfigurationException(
                    "@ZooKeeperTest on " + owner.getRequiredTestClass().getName() + ": " + e.getMessage(), e);
        } catch (Exception e) {
            throw new IllegalStateException("could not start the embedded ZooKeeper ensemble: " + e, e);
        }
    }

    private static void injectFields(Class<?> type, Object instance, ZooKeeperEnsemble ensemble)
            throws IllegalAccessException {
        for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field field : c.getDeclaredFields()) {
                if (field.getType() != ZooKeeperEnsemble.class
                        || Modifier.isStatic(field.getModifiers()) != (instance == null)) {
                    continue;
                }
                if (Modifier.isFinal(field.getModifiers())) {
                    throw new ExtensionConfigurationException("cannot inject the ensemble into final field "
                            + c.getSimpleName() + "." + field.getName() + ": make it non-final");
                }
                field.setAccessible(true);
                field.set(instance, ensemble);
            }
        }
    }
}
