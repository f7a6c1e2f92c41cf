package main

// fiveValidations is the policy of the latency figure: five validations
// on a pod, the shape of a typical pod-hygiene policy.
const fiveValidations = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: pod-hygiene}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    messageExpression: "'image tag latest in ' + object.spec.containers.filter(c, c.image.endsWith(':latest')).map(c, c.name).join(', ')"
  - expression: "object.spec.containers.size() <= 10"
  - expression: "!has(object.spec.hostNetwork) || !object.spec.hostNetwork"
  - expression: "object.metadata.name.size() <= 63"
  - expression: "object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)"
    message: "privileged containers are not allowed"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: pod-hygiene}
spec: {policyName: pod-hygiene, validationActions: [Deny]}
`

// threePolicies are the audit figure's: the five-validation policy, a
// params-free label rule with a variable, and a mutating policy.
const threePolicies = fiveValidations + `---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: team-label}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
  variables:
  - {name: labels, expression: "has(object.metadata.labels) ? object.metadata.labels : {}"}
  validations:
  - expression: "'team' in variables.labels"
    message: "pods need a team label"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: team-label}
spec: {policyName: team-label, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: default-team}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'unknown'}}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: default-team}
spec: {policyName: default-team}
`
