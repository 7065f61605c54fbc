package io.coord.spring;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * The application of README's Spring Boot test: the {@link Billing} service, its store of invoices, and Spring
 * Boot's auto-configuration.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(Billing.class)
class BillingApplication {
    @Bean
    Invoices invoices() {
        return new Invoices();
    }
}
