"""ACL admin RPCs: DescribeAcls (apiKey 29), CreateAcls (30), DeleteAcls (31), as Kafka declares them
(v1 adds the resource pattern type, KIP-290; v2 is the first flexible version; v3 adds the USER
resource type, KIP-554)."""

from kraftwerk.protocol.schema import Field, Kind, field, message


def _filter_fields() -> list[Field]:
    return [
        field("ResourceTypeFilter", "int8", "0+"),
        field("ResourceNameFilter", "string", "0+", nullable="0+"),
        field("PatternTypeFilter", "int8", "1+", default=3),
        field("PrincipalFilter", "string", "0+", nullable="0+"),
        field("HostFilter", "string", "0+", nullable="0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ]


DESCRIBE_ACLS_REQUEST = message(
    "DescribeAclsRequest", 29, Kind.REQUEST, valid="0-3", flexible="2+", fields=_filter_fields())

DESCRIBE_ACLS_RESPONSE = message(
    "DescribeAclsResponse", 29, Kind.RESPONSE, valid="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Resources", "[]DescribeAclsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("PatternType", "int8", "1+", default=3),
            field("Acls", "[]AclDescription", "0+", fields=[
                field("Principal", "string", "0+"),
                field("Host", "string", "0+"),
                field("Operation", "int8", "0+"),
                field("PermissionType", "int8", "0+"),
            ]),
        ]),
    ],
)

CREATE_ACLS_REQUEST = message(
    "CreateAclsRequest", 30, Kind.REQUEST, valid="0-3", flexible="2+",
    fields=[
        field("Creations", "[]AclCreation", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("ResourcePatternType", "int8", "1+", default=3),
            field("Principal", "string", "0+"),
            field("Host", "string", "0+"),
            field("Operation", "int8", "0+"),
            field("PermissionType", "int8", "0+"),
        ]),
    ],
)

CREATE_ACLS_RESPONSE = message(
    "CreateAclsResponse", 30, Kind.RESPONSE, valid="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]AclCreationResult", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
    ],
)

DELETE_ACLS_REQUEST = message(
    "DeleteAclsRequest", 31, Kind.REQUEST, valid="0-3", flexible="2+",
    fields=[field("Filters", "[]DeleteAclsFilter", "0+", fields=_filter_fields())],
)

DELETE_ACLS_RESPONSE = message(
    "DeleteAclsResponse", 31, Kind.RESPONSE, valid="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("FilterResults", "[]DeleteAclsFilterResult", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("MatchingAcls", "[]DeleteAclsMatchingAcl", "0+", fields=[
                field("ErrorCode", "int16", "0+"),
                field("ErrorMessage", "string", "0+", nullable="0+"),
                field("ResourceType", "int8", "0+"),
                field("ResourceName", "string", "0+"),
                field("PatternType", "int8", "1+", default=3),
                field("Principal", "string", "0+"),
                field("Host", "string", "0+"),
                field("Operation", "int8", "0+"),
                field("PermissionType", "int8", "0+"),
            ]),
        ]),
    ],
)

SPECS = (
    DESCRIBE_ACLS_REQUEST,
    DESCRIBE_ACLS_RESPONSE,
    CREATE_ACLS_REQUEST,
    CREATE_ACLS_RESPONSE,
    DELETE_ACLS_REQUEST,
    DELETE_ACLS_RESPONSE,
)
